// Failed conversions leave nothing behind and remove nothing that was there before: every converter (CBF,
// legacy CBF, CTF text, HTK features + SCP) is made to fail midway, by a bad input record and by a write
// that the file system refuses (RLIMIT_FSIZE stands in for a full disk: writes past it fail with EFBIG,
// through the same error paths as ENOSPC). Paths with a NUL byte are refused, in and out.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cbf/cbf_test_util.hpp"
#include "cntkio/cbf.hpp"
#include "cntkio/convert.hpp"
#include "cntkio/ctf.hpp"
#include "cntkio/htk.hpp"

using namespace cntkio;
using namespace cbf_test;

namespace {

// Files written larger than `bytes` fail with EFBIG while this lives (SIGXFSZ, which would kill the
// process, is ignored meanwhile).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = old_;
    limited.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limited);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  void (*old_handler_)(int) = SIG_DFL;
};

// Every path under `dir` (relative) with the content of each file ("/" for folders).
std::map<std::string, std::string> listing(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = fs::relative(entry.path(), dir).string();
    if (entry.is_directory()) {
      out[name] = "/";
    } else {
      const std::vector<unsigned char> bytes = read_bytes(entry.path().string());
      out[name] = std::string(bytes.begin(), bytes.end());
    }
  }
  return out;
}

// `n` sequences of a dense stream f (dim 2) as CTF, sequence `bad` holding a malformed number.
std::string ctf_text(int n, int bad = -1) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    text += std::to_string(i) + " |f " + (i == bad ? std::string("x") : std::to_string(i)) + " 0.5\n";
  }
  return text;
}

// A CTF deserializer over `file` in chunks of about 1 KB, so that many sequences are written before a
// later chunk is loaded.
std::shared_ptr<Deserializer> ctf_source(const std::string& file) {
  CtfOptions o;
  o.file = file;
  o.streams = {CtfStreamOptions{"f", "f", 2, StorageFormat::kDense, false}};
  o.chunk_size_in_bytes = 1024;
  o.trace_level = 0;
  o.log_sink = [](int, std::string_view) {};
  return make_ctf_deserializer(o);
}

HtkConvertOptions htk_options(const TempDir& dir, bool archive = false) {
  HtkConvertOptions o;
  o.scp_file = dir.file("out/list.scp");
  o.archive = archive;
  return o;
}

}  // namespace

// A bad record in a later chunk: the feature files of the sequences before it were written already.
TEST(ConvertCleanup, HtkBadRecordMidwayLeavesNothing) {
  TempDir dir;
  const std::string in = dir.write("in.ctf", ctf_text(300, 250));
  const auto before = listing(dir.path());
  for (bool archive : {false, true}) {
    SCOPED_TRACE(archive ? "archive" : "one file per sequence");
    auto source = ctf_source(in);
    EXPECT_THROW(convert_to_htk(*source, 0, htk_options(dir, archive)), FormatError);
    EXPECT_EQ(listing(dir.path()), before);
  }
}

// The SCP is written last: when it cannot be written, the 300 feature files already written go too.
TEST(ConvertCleanup, HtkFilesGoWhenTheScpCannotBeWritten) {
  TempDir dir;
  const std::string in = dir.write("in.ctf", ctf_text(300));
  const auto before = listing(dir.path());
  auto source = ctf_source(in);
  try {
    FileSizeLimit limit(4096);  // each feature file is 28 bytes, the SCP about 11 KB
    convert_to_htk(*source, 0, htk_options(dir));
    ADD_FAILURE() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_EQ(e.error_number(), EFBIG) << e.what();
  }
  EXPECT_EQ(listing(dir.path()), before);
}

// The archive grows past what the file system takes.
TEST(ConvertCleanup, HtkArchiveThatCannotBeWrittenLeavesNothing) {
  TempDir dir;
  const std::string in = dir.write("in.ctf", ctf_text(3000));
  const auto before = listing(dir.path());
  auto source = ctf_source(in);
  try {
    FileSizeLimit limit(8192);  // 3000 frames of 8 bytes
    convert_to_htk(*source, 0, htk_options(dir, true));
    ADD_FAILURE() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_EQ(e.error_number(), EFBIG) << e.what();
  }
  EXPECT_EQ(listing(dir.path()), before);
}

// An output folder that existed keeps what it held, a feature file of an earlier run included: a failed
// conversion neither removes nor changes it, and removes only the folders it created itself.
TEST(ConvertCleanup, HtkFailureKeepsWhatWasThere) {
  TempDir dir;
  const std::string in = dir.write("in.ctf", ctf_text(300, 250));
  fs::create_directories(dir.path() / "out/list.scp.d");
  dir.write("out/list.scp.d/notes.txt", "mine");
  dir.write("out/list.scp.d/3.htk", "an earlier run's utterance 3");
  dir.write("out/list.scp", "an earlier run's list");
  const auto before = listing(dir.path());
  auto source = ctf_source(in);
  EXPECT_THROW(convert_to_htk(*source, 0, htk_options(dir)), FormatError);
  EXPECT_EQ(listing(dir.path()), before);
  // And a conversion that succeeds replaces the earlier run's files, keeping the rest.
  auto good = ctf_source(dir.write("good.ctf", ctf_text(5)));
  const HtkConvertResult r = convert_to_htk(*good, 0, htk_options(dir));
  EXPECT_EQ(r.utterances, 5u);
  const auto after = listing(dir.path());
  EXPECT_EQ(after.at("out/list.scp.d/notes.txt"), "mine");
  EXPECT_NE(after.at("out/list.scp.d/3.htk"), "an earlier run's utterance 3");
  EXPECT_NE(after.at("out/list.scp"), "an earlier run's list");
  for (const auto& [name, content] : after) EXPECT_EQ(name.find("partial"), std::string::npos) << name;
}

// CBF, legacy CBF and CTF outputs that the file system refuses midway: nothing is left, not even the
// legacy writer's temporary data file.
TEST(ConvertCleanup, OutputsThatCannotBeWrittenLeaveNothing) {
  TempDir dir;
  const std::string in = dir.write("in.ctf", ctf_text(3000));
  const auto before = listing(dir.path());
  for (DataFormat to : {DataFormat::kCbf, DataFormat::kCbfLegacy, DataFormat::kCtf}) {
    SCOPED_TRACE(to_string(to));
    ConvertOptions o;
    o.to = to;
    o.streams = {parse_convert_stream("f::2:dense")};
    o.chunk_size_in_bytes = 1024;
    o.log = [](std::string_view) {};
    try {
      FileSizeLimit limit(8192);
      convert_file(in, DataFormat::kCtf, dir.file("out.bin"), o);
      ADD_FAILURE() << "expected IoError";
    } catch (const IoError& e) {
      EXPECT_EQ(e.error_number(), EFBIG) << e.what();
    }
    EXPECT_EQ(listing(dir.path()), before);
  }
}

// A file that already has the partial name (another run's, or the user's) is neither replaced nor
// removed, whether the conversion fails or succeeds; the legacy writer's temporary data file does not
// touch OUT.data either.
TEST(ConvertCleanup, FilesWithTheTemporaryNamesAreNotTouched) {
  TempDir dir;
  const std::string bad = dir.write("bad.ctf", ctf_text(300, 250));
  const std::string good = dir.write("good.ctf", ctf_text(5));
  for (DataFormat to : {DataFormat::kCbf, DataFormat::kCbfLegacy, DataFormat::kCtf}) {
    SCOPED_TRACE(to_string(to));
    dir.write("out.bin.partial", "not the converter's");
    dir.write("out.bin.data", "not the converter's either");
    dir.write("out.bin.data.partial", "nor this");
    const auto before = listing(dir.path());
    ConvertOptions o;
    o.to = to;
    o.streams = {parse_convert_stream("f::2:dense")};
    o.log = [](std::string_view) {};
    EXPECT_THROW(convert_deserializer(*ctf_source(bad), dir.file("out.bin"), o), FormatError);
    EXPECT_EQ(listing(dir.path()), before);
    convert_file(good, DataFormat::kCtf, dir.file("out.bin"), o);
    auto after = listing(dir.path());
    EXPECT_EQ(after.erase("out.bin"), 1u);
    EXPECT_EQ(after, before);
    fs::remove(dir.file("out.bin"));
  }
}

// Paths with a NUL byte are usage errors (the system would cut them there); a folder is no input.
TEST(ConvertCleanup, PathsWithNulAndFoldersAreRefused) {
  TempDir dir;
  const std::string in = dir.write("in.ctf", ctf_text(3));
  ConvertOptions o;
  o.to = DataFormat::kCbf;
  o.streams = {parse_convert_stream("f::2:dense")};
  o.log = [](std::string_view) {};
  const std::string nul_out = dir.file("out") + std::string(1, '\0') + ".bin";
  EXPECT_THROW(convert_file(in, DataFormat::kCtf, nul_out, o), UsageError);
  o.to = DataFormat::kCtf;
  EXPECT_THROW(convert_file(in, DataFormat::kCtf, nul_out, o), UsageError);
  EXPECT_FALSE(fs::exists(dir.file("out")));
  EXPECT_FALSE(fs::exists(dir.file("out.partial")));

  o.to = DataFormat::kCbf;
  convert_file(in, DataFormat::kCtf, dir.file("ok.bin"), o);
  const std::string nul_in = dir.file("ok.bin") + std::string(1, '\0') + "x";
  EXPECT_THROW(convert_file(nul_in, DataFormat::kCbf, dir.file("again.bin"), o), UsageError);
  EXPECT_THROW(detect_cbf_layout(nul_in), UsageError);
  EXPECT_THROW(read_cbf_header(nul_in), UsageError);
  CbfOptions cbf;
  cbf.file = nul_in;
  EXPECT_THROW(make_cbf_deserializer(cbf), UsageError);
  cbf.file = dir.path().string();
  EXPECT_THROW(make_cbf_deserializer(cbf), IoError);
  EXPECT_THROW(convert_file(dir.path().string(), DataFormat::kCbf, dir.file("again.bin"), o), IoError);

  auto source = ctf_source(in);
  HtkConvertOptions h;
  h.scp_file = dir.file("list") + std::string(1, '\0') + ".scp";
  EXPECT_THROW(convert_to_htk(*source, 0, h), UsageError);
  h.scp_file = dir.file("list.scp");
  h.output_dir = dir.file("feat") + std::string(1, '\0') + "x";
  EXPECT_THROW(convert_to_htk(*source, 0, h), UsageError);
  EXPECT_FALSE(fs::exists(dir.file("list")));
  EXPECT_FALSE(fs::exists(dir.file("list.scp")));
  EXPECT_FALSE(fs::exists(dir.file("feat")));
}
