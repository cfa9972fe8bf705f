// HTK feature files and SCP lines: spec htk.md §3 (SCP) and §4 (file format).
#include "formats/htk/htk_file.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "cntkio/errors.hpp"
#include "cntkio/htk.hpp"
#include "formats/htk/scp.hpp"
#include "htk_corpus.hpp"

using namespace cntkio;
using htk_test::TempDir;

namespace {

std::vector<float> ramp(size_t frames, size_t dim) {
  std::vector<float> v(frames * dim);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.25f - 3.0f;
  return v;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_raw(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// 12-byte little-endian header.
std::string header(uint32_t samples, uint32_t period, uint16_t size, uint16_t kind) {
  std::string h(12, '\0');
  std::memcpy(h.data(), &samples, 4);
  std::memcpy(h.data() + 4, &period, 4);
  std::memcpy(h.data() + 8, &size, 2);
  std::memcpy(h.data() + 10, &kind, 2);
  return h;
}

template <typename E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.cntk_text();
  }
  return "(no error)";
}

}  // namespace

TEST(HtkFile, LittleAndBigEndianFilesReadTheSameFrames) {
  TempDir dir;
  const std::vector<float> frames = ramp(7, 13);
  for (bool big : {false, true}) {
    HtkWriteOptions w;
    w.kind = HtkBaseKind::kMfcc;
    w.qualifiers = 0100 | 0400 | 01000;  // _E _D _A
    w.big_endian = big;
    const std::string path = dir.file(big ? "be.htk" : "le.htk");
    write_htk_file(path, frames.data(), 7, 13, w);
    const std::string raw = bytes_of(path);
    ASSERT_EQ(raw.size(), 12u + 7 * 13 * 4);
    // nSamples is the first field, in the file's byte order.
    EXPECT_EQ(static_cast<unsigned char>(raw[big ? 3 : 0]), 7);
    htk::PositionedFile file(path);
    const htk::HtkHeader h = htk::read_header(file);
    EXPECT_EQ(h.big_endian, big);
    EXPECT_EQ(h.num_frames, 7u);
    EXPECT_EQ(h.dim, 13u);
    EXPECT_EQ(h.sample_period, 100000u);
    EXPECT_EQ(h.kind, "MFCC_E_D_A");
    EXPECT_FALSE(h.compressed);
    std::vector<float> out(3 * 13);
    htk::read_frames(file, h, 2, 3, out.data());  // only frames 2..4
    for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], frames[2 * 13 + i]) << i;
  }
}

TEST(HtkFile, CompressedFramesDecodeAsHtkDefinesInBothByteOrders) {
  TempDir dir;
  std::vector<float> frames = ramp(9, 5);
  frames[3] = 100.0f;  // a wide range in dimension 3
  for (bool big : {false, true}) {
    HtkWriteOptions w;
    w.compressed = true;
    w.big_endian = big;
    const std::string path = dir.file(big ? "c_be.htk" : "c_le.htk");
    write_htk_file(path, frames.data(), 9, 5, w);
    const std::string raw = bytes_of(path);
    // nSamples counts the A/B vectors as 4 frames; frames are 2 bytes per value.
    ASSERT_EQ(raw.size(), 12u + 8 * 5 + 9 * 5 * 2);
    htk::PositionedFile file(path);
    const htk::HtkHeader h = htk::read_header(file);
    EXPECT_TRUE(h.compressed);
    EXPECT_EQ(h.num_frames, 9u);
    EXPECT_EQ(h.dim, 5u);
    EXPECT_EQ(h.kind, "USER");  // _C is not part of the kind string
    EXPECT_EQ(h.data_offset, 12u + 8 * 5);
    const std::vector<float> expected = htk_test::decode_compressed(path, big);
    std::vector<float> out(9 * 5);
    htk::read_frames(file, h, 0, 9, out.data());
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(out[i], expected[i]) << i;
      EXPECT_NEAR(out[i], frames[i], 110.0 / 32767) << i;  // quantisation error of the widest dimension
    }
  }
}

TEST(HtkFile, KindStringFollowsCntkQualifierOrderAndFestreamGuid) {
  TempDir dir;
  const std::vector<float> frames = ramp(2, 3);
  struct Case {
    HtkBaseKind kind;
    uint16_t qualifiers;
    const char* expected;
  };
  for (const Case& c :
       {Case{HtkBaseKind::kPlp, 0, "PLP"}, Case{HtkBaseKind::kFbank, 0200 | 0100, "FBANK_E_N"},
        Case{HtkBaseKind::kUser, 020000 | 04000 | 0100000, "USER_T_Z_0"},
        Case{HtkBaseKind::kMfcc, 010000, "MFCC"},  // _K (CRC) is ignored
        Case{HtkBaseKind::kFestream, 0, "USER;guid=00000000000000000000000000000000"}}) {
    HtkWriteOptions w;
    w.kind = c.kind;
    w.qualifiers = c.qualifiers;
    write_htk_file(dir.file("k.htk"), frames.data(), 2, 3, w);
    htk::PositionedFile file(dir.file("k.htk"));
    const htk::HtkHeader h = htk::read_header(file);
    EXPECT_EQ(h.kind, c.expected);
    std::vector<float> out(6);
    htk::read_frames(file, h, 0, 2, out.data());
    EXPECT_EQ(out, frames);
  }
}

TEST(HtkFile, UnsupportedKindsAndBadSampleSizesAreLocatedErrors) {
  TempDir dir;
  const std::string floats(8, '\0');
  write_raw(dir.file("wave.htk"), header(1, 100000, 8, 0) + floats);   // WAVEFORM
  write_raw(dir.file("vq.htk"), header(1, 100000, 8, 9 | 040000));     // USER_V
  write_raw(dir.file("odd.htk"), header(1, 100000, 6, 9) + floats);    // 6 bytes: not whole floats
  write_raw(dir.file("short.htk"), header(3, 100000, 8, 9) + floats);  // declares 3 frames, holds 1
  write_raw(dir.file("tiny.htk"), std::string(5, '\0'));
  EXPECT_EQ(message_of<FormatError>([&] { htk::read_header(htk::PositionedFile(dir.file("wave.htk"))); }),
            "htkfeatreader:unsupported feature kind");
  EXPECT_EQ(message_of<FormatError>([&] { htk::read_header(htk::PositionedFile(dir.file("vq.htk"))); }),
            "htkfeatreader:we do not support VQ");
  EXPECT_EQ(message_of<FormatError>([&] { htk::read_header(htk::PositionedFile(dir.file("odd.htk"))); }),
            "htkfeatreader:sample size not multiple of dimension");
  EXPECT_THROW(htk::read_header(htk::PositionedFile(dir.file("tiny.htk"))), FormatError);
  htk::PositionedFile file(dir.file("short.htk"));
  const htk::HtkHeader h = htk::read_header(file);
  std::vector<float> out(6);
  try {
    htk::read_frames(file, h, 0, 3, out.data());
    FAIL() << "a file shorter than its header must fail";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.location().file, dir.file("short.htk"));
    EXPECT_EQ(e.location().byte_offset, 12u);
  }
  EXPECT_EQ(message_of<IoError>([&] { htk::PositionedFile missing(dir.file("missing.htk")); }),
            "error opening file '" + dir.file("missing.htk") + "': No such file or directory");
}

TEST(ScpLine, KeyIsTheLogicalNameCutAtItsLastDot) {
  EXPECT_EQ(htk::parse_scp_line("An4/71/71/cen5-fjam-b.mfc=000000000.chunk[0,367]", "x.scp", 1).key,
            "An4/71/71/cen5-fjam-b");
  EXPECT_EQ(htk::parse_scp_line("spk3/sess.1/u21.mfc=a[0,1]", "x.scp", 1).key, "spk3/sess.1/u21");
  EXPECT_EQ(htk::parse_scp_line("a.b/c=f[0,1]", "x.scp", 1).key, "a");  // quirk: dot in a directory
  EXPECT_EQ(htk::parse_scp_line("plain=f[0,1]", "x.scp", 1).key, "plain");
  const htk::ScpEntry e = htk::parse_scp_line("u=dir/a=b.ark[ 12,+20]", "x.scp", 7);
  EXPECT_EQ(e.physical, "dir/a=b.ark");  // further '=' belong to the physical path
  EXPECT_EQ(e.first, 12u);               // atoi: leading blanks and a sign are fine
  EXPECT_EQ(e.last, 20u);
  EXPECT_EQ(e.line, 7u);
}

TEST(ScpLine, RangeSyntaxQuirks) {
  EXPECT_EQ(htk::parse_scp_line("u=f[3,9", "x.scp", 1).last, 9u);     // missing ']' accepted
  EXPECT_EQ(htk::parse_scp_line("u=f[3,9]\r", "x.scp", 1).last, 9u);  // CR right after ']' accepted
  auto error_at = [](const std::string& line) -> std::pair<std::string, uint64_t> {
    try {
      htk::parse_scp_line(line, "list.scp", 4);
    } catch (const FormatError& e) {
      EXPECT_EQ(e.location().file, "list.scp");
      return {e.cntk_text(), e.location().line.value_or(0)};
    }
    return {"(no error)", 0};
  };
  const std::string no_range =
      "parsedpath: this mode requires an input script with start and end frames given";
  EXPECT_EQ(error_at("u.mfc=feat/u.htk"), std::make_pair(no_range, uint64_t{4}));
  EXPECT_EQ(error_at("feat/u.htk[0,3]").first, no_range);  // no '=': a non-archive path
  EXPECT_EQ(error_at("").first, no_range);                 // blank lines are not skipped
  EXPECT_EQ(error_at("u=f[0,3] ").first, "parsedpath: malformed path 'u=f[0,3] '");
  EXPECT_EQ(error_at("u=f[03]").first, "parsedpath: malformed path 'u=f[03]'");
  EXPECT_EQ(error_at("u=f[5,3]").first, "open: start frame 5 > end frame 3 in 'f'");
  // CNTK keeps the low 32 bits of a larger frame number (4294967296 is frame 0): cntkio refuses it.
  EXPECT_EQ(error_at("u=f[4294967296,4294967298]"),
            std::make_pair(std::string("parsedpath: frame number 4294967296 does not fit in 32 bits in "
                                       "'u=f[4294967296,4294967298]'"),
                           uint64_t{4}));
  EXPECT_EQ(error_at("u=f[-4294967295,2]").first,
            "parsedpath: frame number -4294967295 does not fit in 32 bits in 'u=f[-4294967295,2]'");
  EXPECT_EQ(htk::parse_scp_line("u=f[0,4294967295]", "x.scp", 1).last, 4294967295u);    // 32 bits: kept
  EXPECT_EQ(error_at("u=f[-1,3]").first, "open: start frame -1 > end frame 3 in 'f'");  // as CNTK
  // A NUL byte would cut the path where the system reads it: an error at the SCP line, not at the open.
  EXPECT_EQ(
      error_at(std::string("u=a\0b.htk[0,3]", 14)),
      std::make_pair(std::string("the file name 'a\\0b.htk' holds a NUL byte; a path cannot contain one"),
                     uint64_t{4}));
}

TEST(ScpLine, PrefixPathAndThreeDotsAdjustTheLine) {
  EXPECT_EQ(htk::adjust_scp_line("u.mfc=a/b.ark[0,1]", "C:\\data\\\\", "ignored"),
            "u.mfc=C:/data/a/b.ark[0,1]");
  EXPECT_EQ(htk::adjust_scp_line("a/b.htk", "/root//", ""), "/root/a/b.htk");
  EXPECT_EQ(htk::adjust_scp_line("u.mfc=.../b.ark[0,1]", "", "/lists"), "u.mfc=/lists/b.ark[0,1]");
  EXPECT_EQ(htk::adjust_scp_line("u...=.../b[0,1]", "", "/d"), "u/d=.../b[0,1]");  // quirk: first "..." only
  EXPECT_EQ(htk::adjust_scp_line("u=.../b[0,1]", "/p", "/d"), "u=/p/.../b[0,1]");  // no "..." with a prefix
  EXPECT_EQ(htk::scp_directory("/x/y/list.scp"), "/x/y");
  EXPECT_EQ(htk::scp_directory("list.scp"), "");
  EXPECT_EQ(htk::scp_directory("dir/"), "");
}

TEST(ScpFile, EveryLineIsParsedAndAMissingFileIsAnIoError) {
  TempDir dir;
  const std::string scp = dir.write("a.scp", "x.mfc=.../f.ark[0,4]\ny.mfc=g.ark[5,9]");  // no final newline
  const std::vector<htk::ScpEntry> entries = htk::read_scp_file(scp, "");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].physical, dir.path().string() + "/f.ark");
  EXPECT_EQ(entries[1].key, "y");
  EXPECT_EQ(entries[1].first, 5u);
  EXPECT_EQ(entries[1].line, 2u);
  const std::string blank = dir.write("b.scp", "x.mfc=f[0,4]\n\ny.mfc=f[5,9]\n");
  try {
    htk::read_scp_file(blank, "");
    FAIL() << "a blank line must fail";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.location().line, 2u);
  }
  EXPECT_EQ(message_of<IoError>([&] { htk::read_scp_file(dir.file("none.scp"), ""); }),
            "Failed to open input file '" + dir.file("none.scp") + "': No such file or directory");
}
