// Input files: only regular files open, paths with NUL bytes are refused, and a mapped file cut short by
// another process gives an IoError instead of killing the process with SIGBUS.
#include "core/input_file.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "cntkio/errors.hpp"
#include "config/config_test_util.hpp"
#include "core/mapped_file.hpp"

using namespace cntkio;
using cntkio::config_test::TempDir;

namespace {

template <class Error, class Fn>
std::string error_text(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "nothing was thrown";
  return {};
}

}  // namespace

TEST(InputFile, ReadsARegularFileWholeAndInRanges) {
  TempDir dir;
  const std::string path = dir.write("a.txt", "hello world");
  core::InputFile file = core::InputFile::open(path);
  EXPECT_EQ(file.size(), 11u);
  EXPECT_EQ(file.read_all(), "hello world");
  char buffer[5];
  EXPECT_EQ(file.read_at(6, buffer, 5), 5u);
  EXPECT_EQ(std::string(buffer, 5), "world");
  EXPECT_EQ(file.read_at(9, buffer, 5), 2u);
  const std::string text = error_text<IoError>([&] { file.read_exact_at(9, buffer, 5); });
  EXPECT_NE(text.find("ended at byte 11 while reading bytes 9..14"), std::string::npos) << text;
  EXPECT_NE(text.find(path), std::string::npos) << text;
}

TEST(InputFile, RefusesDirectoriesFifosAndDevicesWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir.path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(
      error_text<IoError>([&] { core::InputFile::open(fifo); }).find("it is a FIFO, not a regular file"),
      std::string::npos);
  EXPECT_NE(error_text<IoError>([&] { core::read_input_file(dir.path("")); }).find("it is a directory"),
            std::string::npos);
  const std::string zero =
      error_text<IoError>([&] { core::read_input_file("/dev/zero", "cannot open image"); });
  EXPECT_NE(zero.find("cannot open image (it is a device, not a regular file)"), std::string::npos) << zero;
  EXPECT_NE(error_text<IoError>([&] { core::MappedFile mapped(fifo); }).find("FIFO"), std::string::npos);
  EXPECT_NE(error_text<IoError>([&] { core::InputFile::open(dir.path("missing")); }).find("No such file"),
            std::string::npos);
}

TEST(InputFile, APathWithANulByteIsAUsageErrorNotAnotherFile) {
  TempDir dir;
  const std::string path = dir.write("d.ctf", "|a 1\n");
  const std::string with_nul = path + std::string("\0x", 2);
  const std::string text = error_text<UsageError>([&] { core::InputFile::open(with_nul); });
  EXPECT_NE(text.find("holds a NUL byte at position " + std::to_string(path.size())), std::string::npos)
      << text;
  EXPECT_NE(text.find("d.ctf\\0x"), std::string::npos) << text;
  EXPECT_THROW(core::MappedFile mapped(with_nul), UsageError);
  EXPECT_THROW(core::check_input_path(""), UsageError);
}

TEST(InputFile, ReadAllReadsPastTheSizeAtOpenAndHonoursTheLimit) {
  TempDir dir;
  const std::string path = dir.write("grow.txt", "abc");
  core::InputFile file = core::InputFile::open(path);
  dir.write("grow.txt", "abcdefgh");  // rewritten in place, longer
  EXPECT_EQ(file.read_all(), "abcdefgh");
  EXPECT_THROW(file.read_all(4), IoError);
}

TEST(MappedFileGuard, AFileCutWhileMappedReadsZerosAndThenFailsTheCheck) {
  TempDir dir;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const std::string path = dir.write("big.bin", std::string(64 * page, 'x'));
  core::MappedFile mapped(path);
  ASSERT_EQ(mapped.size(), 64 * page);
  mapped.check_intact();
  mapped.check_covers(64 * page);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(2 * page)), 0);

  // The cheap check sees the new size before anything is touched.
  std::string text = error_text<IoError>([&] { mapped.check_covers(64 * page); });
  EXPECT_NE(text.find("cut while being read: it had " + std::to_string(64 * page) +
                      " bytes when opened and now has " + std::to_string(2 * page)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(path), std::string::npos) << text;

  // Touching a page past the new end would raise SIGBUS: the guard turns it into zeros and a failed check.
  const uint64_t faults_before = core::testing::guarded_faults();
  const volatile char* bytes = mapped.data();
  EXPECT_EQ(bytes[0], 'x');
  EXPECT_EQ(bytes[10 * page + 3], 0);
  EXPECT_EQ(bytes[63 * page], 0);
  EXPECT_EQ(core::testing::guarded_faults(), faults_before + 2);
  text = error_text<IoError>([&] { mapped.check_intact(); });
  EXPECT_NE(text.find("now has " + std::to_string(2 * page)), std::string::npos) << text;
}

// Cut inside its last page, the file faults nowhere: the page's rest reads as zeros, and only the size
// shows that those zeros are not the file's.
TEST(MappedFileGuard, ACutInsideThePageItsEndFallsInFailsTheCheckWithoutAnyFault) {
  TempDir dir;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const std::string path = dir.write("big.bin", std::string(32 * page, 'x'));
  core::MappedFile mapped(path);
  const uint64_t faults_before = core::testing::guarded_faults();
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(32 * page - 100)), 0);
  const volatile char* bytes = mapped.data();
  EXPECT_EQ(bytes[32 * page - 101], 'x');
  EXPECT_EQ(bytes[32 * page - 50], 0);
  EXPECT_EQ(core::testing::guarded_faults(), faults_before);
  const std::string text = error_text<IoError>([&] { mapped.check_intact(); });
  EXPECT_NE(text.find("now has " + std::to_string(32 * page - 100)), std::string::npos) << text;
}

namespace {
std::atomic<int> g_foreign_sigbus{0};
void count_foreign_sigbus(int) {
  g_foreign_sigbus.fetch_add(1);
}
}  // namespace

TEST(MappedFileGuard, ASigbusThatIsNotAboutAMappingGoesToThePreviousHandler) {
  struct sigaction previous {};
  struct sigaction counting {};
  counting.sa_handler = &count_foreign_sigbus;
  sigemptyset(&counting.sa_mask);
  ASSERT_EQ(::sigaction(SIGBUS, &counting, &previous), 0);
  {
    TempDir dir;
    const std::string path = dir.write("m.bin", std::string(1 << 20, 'y'));
    core::MappedFile mapped(path);  // installs the guard over the counting handler
    ::raise(SIGBUS);
    EXPECT_EQ(g_foreign_sigbus.load(), 1);
    mapped.check_intact();  // a signal from elsewhere does not mark the mapping
  }
  ::sigaction(SIGBUS, &previous, nullptr);
}

TEST(MappedFile, SmallFilesAreReadIntoMemoryAndCannotBeCutUnderTheReader) {
  TempDir dir;
  const std::string path = dir.write("s.txt", "0123456789");
  core::MappedFile mapped(path);
  ASSERT_EQ(::truncate(path.c_str(), 0), 0);
  EXPECT_EQ(mapped.view(), "0123456789");
  mapped.check_intact();
}
