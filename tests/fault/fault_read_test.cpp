// Read faults under every format (issue #24): a read that fails (EIO), a short read and a file truncated
// under its reader each give a located IoError naming the file, never a crash, a hang or wrong data, and
// the next clean run reads the full, correct data.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cntkio/convert.hpp"
#include "cntkio/htk.hpp"
#include "config/config_test_util.hpp"
#include "fault/fault_util.hpp"

using namespace cntkio;
using namespace cntkio::fault_test;
using cntkio::config_test::TempDir;

namespace {

std::string ctf_text(int sequences) {
  std::string text;
  for (int s = 0; s < sequences; ++s) {
    for (int row = 0; row <= s % 3; ++row) {
      text += std::to_string(s) + " |x " + std::to_string(s) + " " + std::to_string(row + 1) + "\n";
    }
  }
  return text;
}

std::string ctf_reader(const std::string& file) {
  return "reader = [ readerType = CNTKTextFormatReader ; file = \"" + file +
         "\" ; randomize = false ; input = [ x = [ dim = 2 ; format = dense ] ] ]";
}

std::string cbf_reader(const std::string& file) {
  return "reader = [ readerType = CNTKBinaryReader ; file = \"" + file +
         "\" ; randomize = false ; input = [ x = [ alias = x ; dim = 2 ; format = dense ] ] ]";
}

std::string make_cbf(const TempDir& dir) {
  const std::string ctf = dir.write("d.ctf", ctf_text(300));
  ConvertOptions options;
  options.streams = {parse_convert_stream("x:x:2:dense")};
  options.chunk_size_in_bytes = 1024;
  options.log = [](std::string_view) {};
  const std::string cbf = dir.path("d.bin");
  convert_file(ctf, DataFormat::kCtf, cbf, options);
  return cbf;
}

struct HtkCorpus {
  std::string features, scp, mlf, states, reader;
};

HtkCorpus make_htk(const TempDir& dir) {
  HtkCorpus c;
  std::vector<float> frames;
  for (int i = 0; i < 16; ++i) frames.push_back(static_cast<float>(i + 1));
  c.features = dir.path("f.htk");
  write_htk_file(c.features, frames.data(), 8, 2);
  c.scp = dir.write("f.scp", "a.x=" + c.features + "[0,4]\nb.x=" + c.features + "[5,7]\n");
  c.states = dir.write("s.list", "x\ny\n");
  c.mlf = dir.write("m.mlf", "#!MLF!#\n\"a.lab\"\n0 5 x\n.\n\"b.lab\"\n0 3 y\n.\n");
  c.reader =
      "reader = [ randomize = false\nframeMode = false\n"
      "deserializers = ([ type = \"HTKFeatureDeserializer\" input = [ f = [ dim = 2 ; scpFile = \"" +
      c.scp + "\" ] ] ]:[ type = \"HTKMLFDeserializer\" input = [ l = [ mlfFile = \"" + c.mlf +
      "\" ; labelMappingFile = \"" + c.states + "\" ; labelDim = 2 ] ] ]) ]";
  return c;
}

}  // namespace

TEST(FaultRead, CtfReadErrorsAndShortReadsAreLocatedIoErrors) {
  TempDir dir;
  const std::string file = dir.write("d.ctf", ctf_text(200));
  const std::string reader = ctf_reader(file);
  const std::string clean = read_all(reader);
  ASSERT_FALSE(clean.empty());
  auto body = [&] { return read_all(reader); };
  EXPECT_GE(sweep_read_faults(Fault::Kind::kError, EIO, file, "cannot read bytes 0..", clean, body), 1);
  EXPECT_GE(sweep_read_faults(Fault::Kind::kShortRead, 0, file, "cut while being read", clean, body), 1);
}

TEST(FaultRead, CbfReadErrorsAndShortReadsAreLocatedIoErrors) {
  TempDir dir;
  const std::string file = make_cbf(dir);
  const std::string reader = cbf_reader(file);
  const std::string clean = read_all(reader);
  ASSERT_FALSE(clean.empty());
  auto body = [&] { return read_all(reader); };
  EXPECT_GE(sweep_read_faults(Fault::Kind::kError, ENOSPC, file, "cannot read bytes", clean, body), 1);
  EXPECT_GE(sweep_read_faults(Fault::Kind::kShortRead, 0, file, "cut while being read", clean, body), 1);
}

TEST(FaultRead, HtkFeatureScpMlfAndStateListReadErrorsAreLocatedIoErrors) {
  TempDir dir;
  const HtkCorpus c = make_htk(dir);
  const std::string clean = read_all(c.reader);
  ASSERT_FALSE(clean.empty());
  auto body = [&] { return read_all(c.reader); };
  // The feature file is read a header and a range at a time: every one of those reads is failed in turn.
  EXPECT_GE(sweep_read_faults(Fault::Kind::kError, EIO, c.features, "cannot read bytes", clean, body), 2);
  for (const std::string& list : {c.scp, c.mlf, c.states}) {
    EXPECT_GE(sweep_read_faults(Fault::Kind::kError, EIO, list, "cannot read bytes", clean, body), 1) << list;
  }
}

TEST(FaultRead, HtkShortReadsOfTheFeatureFileAreLocatedIoErrors) {
  TempDir dir;
  const HtkCorpus c = make_htk(dir);
  const std::string clean = read_all(c.reader);
  auto body = [&] { return read_all(c.reader); };
  EXPECT_GE(sweep_read_faults(Fault::Kind::kShortRead, 0, c.features, "byte", clean, body), 2);
}

// The file is cut to half its size at its 1st, 2nd, ... read. Where the reader still has it open, the bytes
// that are gone are an IoError ("cut while being read", "ended at byte"); where it opens the file again
// afterwards (HTK opens a feature file per chunk) the file is then malformed, a FormatError at the byte
// offset where it ends. Either names the file; no run reads on with wrong data.
TEST(FaultRead, AFileTruncatedUnderItsReaderIsALocatedErrorAndARestoredFileReadsAgain) {
  TempDir dir;
  const std::string ctf = dir.write("d.ctf", ctf_text(200));
  const std::string cbf = make_cbf(dir);
  const HtkCorpus htk = make_htk(dir);
  struct Case {
    std::string file, reader;
  };
  for (const Case& k :
       {Case{ctf, ctf_reader(ctf)}, Case{cbf, cbf_reader(cbf)}, Case{htk.features, htk.reader}}) {
    SCOPED_TRACE(k.file);
    const std::string clean = read_all(k.reader);
    const std::string bytes = [&] {
      std::ifstream in(k.file, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    }();
    int io_errors = 0;
    for (uint64_t n = 1; n <= 64; ++n) {
      Fault f = fault(Fault::Op::kRead, Fault::Kind::kTruncate, n, k.file);
      f.truncate_to = bytes.size() / 2;
      const Outcome o = run_with(f, [&] { return read_all(k.reader); });
      std::ofstream(k.file, std::ios::binary | std::ios::trunc) << bytes;
      if (!o.fired) break;
      ASSERT_TRUE(o.io_error || o.format_error) << "a file cut to half under its reader was read to the end";
      io_errors += o.io_error ? 1 : 0;
      EXPECT_EQ(o.path, k.file) << o.what;
      EXPECT_NE(o.what.find("byte"), std::string::npos) << o.what;
      EXPECT_EQ(read_all(k.reader), clean);
    }
    EXPECT_GE(io_errors, 1) << "no cut was seen by a reader that had the file open";
  }
}
