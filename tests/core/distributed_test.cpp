// Worker rank and count from the launcher's environment (OpenMPI, PMI, torchrun).
#include "cntkio/distributed.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cntkio/errors.hpp"

namespace {

// Sets the variables for one test and removes them afterwards, whatever the test did.
class ScopedEnvironment {
 public:
  ScopedEnvironment(std::initializer_list<std::pair<const char*, const char*>> values) {
    clear();
    for (const auto& [name, value] : values) ::setenv(name, value, 1);
  }
  ~ScopedEnvironment() { clear(); }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  static void clear() {
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                             "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "RANK", "WORLD_SIZE", "LOCAL_RANK"}) {
      ::unsetenv(name);
    }
  }
};

std::string usage_error_text() {
  try {
    cntkio::worker_from_environment();
  } catch (const cntkio::UsageError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST(WorkerEnvironment, ReadsTorchrunsVariables) {
  ScopedEnvironment env({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}});
  const cntkio::WorkerInfo info = cntkio::worker_from_environment();
  EXPECT_EQ(info.rank, 3u);
  EXPECT_EQ(info.count, 8u);
  EXPECT_EQ(info.local_rank, 1u);
  EXPECT_EQ(info.source, "torch");
}

TEST(WorkerEnvironment, ACountBeyondSixtyFourBitsIsRefusedNotSaturated) {
  ScopedEnvironment env({{"RANK", "0"}, {"WORLD_SIZE", "100000000000000000000000"}});
  EXPECT_NE(usage_error_text().find("WORLD_SIZE='100000000000000000000000' is out of range"),
            std::string::npos);
}

TEST(WorkerEnvironment, SignsSpacesAndTrailingTextAreNotNumbers) {
  for (const char* bad : {"-1", "+2", " 2", "2 ", "2x", ""}) {
    ScopedEnvironment env({{"RANK", "0"}, {"WORLD_SIZE", bad}});
    const std::string text = usage_error_text();
    if (*bad == '\0') {
      EXPECT_NE(text.find("must both be set"), std::string::npos) << "'" << bad << "': " << text;
    } else {
      EXPECT_NE(text.find("is not a non-negative integer"), std::string::npos) << "'" << bad << "': " << text;
    }
  }
}
