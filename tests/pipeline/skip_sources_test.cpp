// SkipSources alone: the skip report summed over its sources, and the input check of its deserializers.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cntkio/errors.hpp"
#include "pipeline/randomizer_mock.hpp"
#include "pipeline/skip_report.hpp"

namespace cntkio::pipeline {
namespace {

using testing::MockDeserializer;

// A mock whose input can be "cut" and that reports fixed skips.
class CheckedDeserializer final : public MockDeserializer {
 public:
  CheckedDeserializer(std::string file, uint64_t rows)
      : MockDeserializer({{1, 1}}), file_(std::move(file)), rows_(rows) {}
  void cut() { cut_ = true; }
  size_t checks() const { return checks_; }

  void check_inputs_intact() const override {
    ++checks_;
    if (cut_) throw IoError("input was cut while it was read", file_, 0);
  }
  void add_skips(SkipReport& report) const override {
    report.rows_skipped += rows_;
    report.first_locations.push_back(file_ + ":1:1");
  }

 private:
  std::string file_;
  uint64_t rows_;
  bool cut_ = false;
  mutable size_t checks_ = 0;
};

struct TwoInputs {
  std::shared_ptr<CheckedDeserializer> a = std::make_shared<CheckedDeserializer>("a.ctf", 2);
  std::shared_ptr<CheckedDeserializer> b = std::make_shared<CheckedDeserializer>("b.ctf", 3);
  SkipSources sources() const { return SkipSources{{a, b}, nullptr, {}, {}}; }
};

TEST(SkipSources, TheInputCheckAsksEveryDeserializer) {
  TwoInputs inputs;
  inputs.sources().check_inputs_intact();
  EXPECT_EQ(inputs.a->checks(), 1u);
  EXPECT_EQ(inputs.b->checks(), 1u);
}

TEST(SkipSources, ACutInputFailsTheCheckWithItsPath) {
  TwoInputs inputs;
  inputs.b->cut();
  try {
    inputs.sources().check_inputs_intact();
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), "b.ctf");
  }
}

TEST(SkipSources, TheInputCheckFunctionOutlivesTheSources) {
  TwoInputs inputs;
  std::function<void()> check = inputs.sources().input_check();  // the SkipSources is gone
  check();
  EXPECT_EQ(inputs.a->checks(), 1u);
  inputs.a->cut();
  EXPECT_THROW(check(), IoError);
}

TEST(SkipSources, TheReportSumsTheDeserializersAndTheCleaner) {
  TwoInputs inputs;
  SkipSources sources = inputs.sources();
  sources.sequences_removed = [] { return size_t{4}; };
  sources.sequences_removed_keys = [] { return std::vector<std::string>{"k7"}; };
  const SkipReport report = sources.report();
  EXPECT_EQ(report.rows_skipped, 5u);
  EXPECT_EQ(report.sequences_skipped, 4u);
  EXPECT_EQ(report.first_locations,
            (std::vector<std::string>{"a.ctf:1:1", "b.ctf:1:1",
                                      "sequence k7 (invalid: its data could not be read)"}));
}

}  // namespace
}  // namespace cntkio::pipeline
