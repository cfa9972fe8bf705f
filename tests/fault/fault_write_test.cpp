// Write faults under every writer (issue #24): `convert` (CTF to CBF, CBF to CTF), `convert-htk` (one file
// per sequence, and one archive) and the CTF index cache, each under a failed write (EIO, ENOSPC), a failed
// sync, a failed rename and a crash between the write and the rename: a located IoError (the index cache:
// no cache, and the reason), nothing at the final name (or what was there before, unchanged), no torn cache
// used later, and the next clean run writes the full, correct output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cntkio/convert.hpp"
#include "cntkio/ctf.hpp"
#include "cntkio/htk.hpp"
#include "config/config_test_util.hpp"
#include "fault/fault_util.hpp"

using namespace cntkio;
using namespace cntkio::fault_test;
using cntkio::config_test::TempDir;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string ctf_text(int sequences) {
  std::string text;
  for (int s = 0; s < sequences; ++s) {
    for (int row = 0; row <= s % 3; ++row) {
      text += std::to_string(s) + " |x " + std::to_string(s % 97) + " " + std::to_string(row + 1) + "\n";
    }
  }
  return text;
}

// A fault of each class on the writes of files whose path holds `part`: the 1st, 2nd, ... write (EIO, then
// ENOSPC), the sync and the rename.
std::vector<Fault> write_faults(const std::string& part, uint64_t nth) {
  return {fault(Fault::Op::kWrite, Fault::Kind::kError, nth, part, EIO),
          fault(Fault::Op::kWrite, Fault::Kind::kError, nth, part, ENOSPC),
          fault(Fault::Op::kSync, Fault::Kind::kError, nth, part, EIO),
          fault(Fault::Op::kRename, Fault::Kind::kError, nth, part, EIO)};
}

// Runs `write` under `f`; returns whether the fault fired. A fired fault must end in an IoError naming
// `output` or its temporary, with the fault's errno.
template <typename Write>
bool expect_located_failure(const Fault& f, const std::string& output, Write write) {
  const Outcome o = run_with(f, [&] {
    write();
    return std::string();
  });
  if (!o.fired) {
    EXPECT_FALSE(o.io_error) << o.what;
    return false;
  }
  EXPECT_TRUE(o.io_error) << "a failed write went unnoticed";
  EXPECT_EQ(o.path.rfind(output, 0), 0u) << o.what;
  EXPECT_EQ(o.error_number, f.error) << o.what;
  return true;
}

std::string cbf_reader(const std::string& file) {
  return "reader = [ readerType = CNTKBinaryReader ; file = \"" + file +
         "\" ; randomize = false ; input = [ x = [ alias = x ; dim = 2 ; format = dense ] ] ]";
}

std::string ctf_reader(const std::string& file, bool cache = false) {
  return "reader = [ readerType = CNTKTextFormatReader ; file = \"" + file + "\" ; randomize = false ; " +
         (cache ? "cacheIndex = true ; " : "") + "input = [ x = [ dim = 2 ; format = dense ] ] ]";
}

}  // namespace

TEST(FaultWrite, ConvertCtfToCbfLeavesNothingAtTheOutputUnderEveryFaultAndACleanRunWritesItAll) {
  TempDir dir;
  const std::string ctf = dir.write("d.ctf", ctf_text(3000));
  const std::string out = dir.path("out.bin");
  ConvertOptions options;
  options.streams = {parse_convert_stream("x:x:2:dense")};
  options.chunk_size_in_bytes = 4096;
  options.log = [](std::string_view) {};
  auto convert = [&] { convert_file(ctf, DataFormat::kCtf, out, options); };
  convert();
  const std::string clean = read_all(cbf_reader(out));
  const std::string clean_bytes = slurp(out);
  int fired = 0;
  for (uint64_t nth = 1; nth <= 4; ++nth) {
    for (const Fault& f : write_faults("out.bin", nth)) {
      // A file the user had at the output name stays as it was when a conversion fails.
      dir.write("out.bin", "the user's file");
      if (!expect_located_failure(f, out, convert)) continue;
      ++fired;
      EXPECT_EQ(slurp(out), "the user's file");
      EXPECT_EQ(files_holding(dir.path(""), ".partial"), 0) << "a temporary was left behind";
    }
  }
  EXPECT_GE(fired, 5);
  convert();
  EXPECT_TRUE(slurp(out) == clean_bytes);
  EXPECT_EQ(read_all(cbf_reader(out)), clean);
}

TEST(FaultWrite, ConvertCbfToCtfLeavesNothingAtTheOutputUnderEveryFault) {
  TempDir dir;
  const std::string ctf = dir.write("d.ctf", ctf_text(500));
  const std::string cbf = dir.path("d.bin");
  ConvertOptions to_cbf;
  to_cbf.streams = {parse_convert_stream("x:x:2:dense")};
  to_cbf.log = [](std::string_view) {};
  convert_file(ctf, DataFormat::kCtf, cbf, to_cbf);
  const std::string out = dir.path("back.ctf");
  ConvertOptions to_ctf;
  to_ctf.to = DataFormat::kCtf;
  to_ctf.log = [](std::string_view) {};
  auto convert = [&] { convert_file(cbf, DataFormat::kCbf, out, to_ctf); };
  int fired = 0;
  for (const Fault& f : write_faults("back.ctf", 1)) {
    fs::remove(out);
    if (!expect_located_failure(f, out, convert)) continue;
    ++fired;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_EQ(files_holding(dir.path(""), ".partial"), 0);
  }
  EXPECT_EQ(fired, 4);
  convert();
  EXPECT_EQ(read_all(ctf_reader(out)), read_all(ctf_reader(ctf)));
}

TEST(FaultWrite, AConvertCrashBeforeTheRenameLeavesOnlyItsTemporaryAndTheNextRunWritesTheOutput) {
  TempDir dir;
  const std::string ctf = dir.write("d.ctf", ctf_text(300));
  const std::string out = dir.path("out.bin");
  ConvertOptions options;
  options.streams = {parse_convert_stream("x:x:2:dense")};
  options.log = [](std::string_view) {};
  auto env = std::make_shared<FaultEnv>();
  env->add(fault(Fault::Op::kRename, Fault::Kind::kCrash, 1, "out.bin"));
  {
    ScopedEnv scoped(env);
    EXPECT_THROW(convert_file(ctf, DataFormat::kCtf, out, options), core::SimulatedCrash);
  }
  EXPECT_FALSE(fs::exists(out)) << "the final name appeared before the rename";
  EXPECT_TRUE(fs::exists(out + ".partial")) << "a dead writer leaves its temporary";
  convert_file(ctf, DataFormat::kCtf, out, options);  // the temporary is not its own: it writes another
  EXPECT_EQ(read_all(cbf_reader(out)), read_all(ctf_reader(ctf)));
}

namespace {

std::shared_ptr<Deserializer> ctf_source(const std::string& file) {
  CtfOptions o;
  o.file = file;
  CtfStreamOptions s;
  s.name = "x";
  s.dim = 2;
  o.streams.push_back(s);
  o.trace_level = 0;
  return make_ctf_deserializer(o);
}

std::string htk_reader(const std::string& scp) {
  return "reader = [ randomize = false\ndeserializers = ([ type = \"HTKFeatureDeserializer\" input = [ x = [ "
         "dim = 2 ; scpFile = \"" +
         scp + "\" ] ] ]) ]";
}

}  // namespace

TEST(FaultWrite, ConvertHtkRollsBackEveryFileUnderEveryFaultAndACleanRunWritesItAll) {
  for (const bool archive : {false, true}) {
    SCOPED_TRACE(archive ? "archive" : "a file per sequence");
    TempDir dir;
    const std::string ctf = dir.write("d.ctf", ctf_text(12));
    HtkConvertOptions options;
    options.scp_file = dir.path("out.scp");
    options.output_dir = dir.path("features");
    options.archive = archive;
    auto convert = [&] {
      auto source = ctf_source(ctf);
      convert_to_htk(*source, 0, options);
    };
    int fired = 0;
    // The feature files' writes, syncs and renames (their commit into the staging folder, and the moves
    // into place), then the SCP's.
    for (const std::string& part : {std::string("features"), std::string("out.scp")}) {
      for (uint64_t nth = 1; nth <= 3; ++nth) {
        for (const Fault& f : write_faults(part, nth)) {
          fs::remove(options.scp_file);  // what a run whose fault did not fire wrote
          fs::remove_all(options.output_dir);
          const Outcome o = run_with(f, [&] {
            convert();
            return std::string();
          });
          if (!o.fired) continue;
          ++fired;
          EXPECT_TRUE(o.io_error) << "a failed write went unnoticed";
          EXPECT_EQ(o.path.rfind(dir.path(""), 0), 0u) << o.what;
          EXPECT_EQ(o.error_number, f.error) << o.what;
          EXPECT_FALSE(fs::exists(options.scp_file)) << o.what;
          EXPECT_FALSE(fs::exists(options.output_dir)) << "the output folder was not rolled back: " << o.what;
          EXPECT_EQ(files_holding(dir.path(""), ".partial"), 0) << o.what;
        }
      }
    }
    EXPECT_GE(fired, 12);
    convert();
    const std::string back = read_all(htk_reader(options.scp_file));
    EXPECT_FALSE(back.empty());
    // The values read back are the CTF's.
    EXPECT_EQ(back.substr(back.find('\n')), [&] {
      const std::string text = read_all(ctf_reader(ctf));
      return text.substr(text.find('\n'));
    }());
  }
}

// Replacing an earlier conversion's files: a run stopped while it moves its files into place must not leave
// the earlier list naming a mix of old and new files (it read as a whole with no error). The old list goes
// before the first file is replaced; a clean run then writes everything.
TEST(FaultWrite, ConvertHtkStoppedWhileReplacingLeavesNoListOfMixedFiles) {
  TempDir dir;
  HtkConvertOptions options;
  options.scp_file = dir.path("out.scp");
  options.output_dir = dir.path("features");
  {
    auto old_source = ctf_source(dir.write("old.ctf", ctf_text(12)));
    convert_to_htk(*old_source, 0, options);
  }
  ASSERT_TRUE(fs::exists(options.scp_file));
  std::string newer;  // the same keys, other values
  for (int s = 0; s < 12; ++s) newer += std::to_string(s) + " |x " + std::to_string(500 + s) + " 7\n";
  const std::string new_ctf = dir.write("new.ctf", newer);
  // key 1's file is the second moved into place (key 0's is replaced before it)
  const Outcome o = run_with(fault(Fault::Op::kRename, Fault::Kind::kError, 1, "features/1.htk"), [&] {
    auto source = ctf_source(new_ctf);
    convert_to_htk(*source, 0, options);
    return std::string();
  });
  ASSERT_TRUE(o.fired);
  EXPECT_TRUE(o.io_error) << o.what;
  EXPECT_FALSE(fs::exists(options.scp_file)) << "the old list still names the files, now old and new mixed";
  auto source = ctf_source(new_ctf);
  convert_to_htk(*source, 0, options);
  const std::string back = read_all(htk_reader(options.scp_file));
  const std::string text = read_all(ctf_reader(new_ctf));
  EXPECT_EQ(back.substr(back.find('\n')), text.substr(text.find('\n')));
}

TEST(FaultWrite, TheIndexCacheIsNeverTornUnderAWriteFaultAndACleanRunWritesAndUsesIt) {
  TempDir dir;
  const std::string file = dir.write("d.ctf", ctf_text(2000));
  CtfOptions o;
  o.file = file;
  CtfStreamOptions s;
  s.name = "x";
  s.dim = 2;
  o.streams.push_back(s);
  o.trace_level = 0;
  o.cache_index = true;
  const std::string cache = ctf_cache_file_name(o);
  const std::string clean = read_all(ctf_reader(file));
  int fired = 0;
  for (const Fault& f : write_faults(cache, 1)) {
    auto env = std::make_shared<FaultEnv>();
    env->add(f);
    {
      ScopedEnv scoped(env);
      const auto d = make_ctf_deserializer(o);
      const CtfIndexSummary summary = ctf_index_summary(*d);
      EXPECT_FALSE(summary.cache_written);
      // The reason names the cache (or its temporary) and what failed.
      EXPECT_NE(summary.cache_not_written_reason.find(cache), std::string::npos)
          << summary.cache_not_written_reason;
      EXPECT_FALSE(fs::exists(cache)) << "a cache whose write failed is at its final name";
      EXPECT_EQ(files_holding(dir.path(""), ".tmp."), 0) << "the cache's temporary was left behind";
      EXPECT_EQ(read_all(ctf_reader(file)), clean);
    }
    fired += env->fired() > 0 ? 1 : 0;
  }
  EXPECT_EQ(fired, 4);
  // A crash between the write and the rename: no cache, the temporary left as a dead process leaves it.
  {
    auto env = std::make_shared<FaultEnv>();
    env->add(fault(Fault::Op::kRename, Fault::Kind::kCrash, 1, cache));
    ScopedEnv scoped(env);
    EXPECT_THROW(make_ctf_deserializer(o), core::SimulatedCrash);
  }
  EXPECT_FALSE(fs::exists(cache));
  EXPECT_EQ(files_holding(dir.path(""), ".tmp."), 1);
  // The next clean run writes the cache (over its own temporary's name), and the one after uses it.
  EXPECT_TRUE(ctf_index_summary(*make_ctf_deserializer(o)).cache_written);
  EXPECT_EQ(files_holding(dir.path(""), ".tmp."), 0);
  EXPECT_TRUE(ctf_index_summary(*make_ctf_deserializer(o)).loaded_from_cache);
  EXPECT_EQ(read_all(ctf_reader(file, true)), clean);
}

TEST(FaultWrite, ATornIndexCacheAtItsFinalNameIsNeverUsed) {
  TempDir dir;
  const std::string file = dir.write("d.ctf", ctf_text(2000));
  const std::string clean = read_all(ctf_reader(file));
  CtfOptions o;
  o.file = file;
  CtfStreamOptions s;
  s.name = "x";
  s.dim = 2;
  o.streams.push_back(s);
  o.trace_level = 0;
  o.cache_index = true;
  ASSERT_TRUE(ctf_index_summary(*make_ctf_deserializer(o)).cache_written);
  const std::string cache = ctf_cache_file_name(o);
  const std::string whole = slurp(cache);
  // Cut in its records: never used. Cut in cntkio's footer only: CNTK's records before it are whole, and may
  // be used as a cache CNTK wrote; the data read is the same either way.
  for (const size_t cut : {whole.size() / 3, whole.size() / 2, whole.size() - 8}) {
    std::ofstream(cache, std::ios::binary | std::ios::trunc) << whole.substr(0, cut);
    const CtfIndexSummary summary = ctf_index_summary(*make_ctf_deserializer(o));
    if (cut <= whole.size() / 2) {
      EXPECT_FALSE(summary.loaded_from_cache) << "a cache cut to " << cut << " bytes was used";
    }
    std::ofstream(cache, std::ios::binary | std::ios::trunc) << whole.substr(0, cut);
    EXPECT_EQ(read_all(ctf_reader(file, true)), clean) << "cut to " << cut;
  }
  // A failed read of the cache: indexed again from the data, the same data.
  std::ofstream(cache, std::ios::binary | std::ios::trunc) << whole;
  const Outcome failed = run_with(fault(Fault::Op::kRead, Fault::Kind::kError, 1, cache), [&] {
    EXPECT_FALSE(ctf_index_summary(*make_ctf_deserializer(o)).loaded_from_cache);
    return read_all(ctf_reader(file, true));
  });
  EXPECT_TRUE(failed.fired);
  EXPECT_FALSE(failed.io_error) << failed.what;
  EXPECT_EQ(failed.data, clean);
}
