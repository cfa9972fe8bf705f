// Corrupt, truncated and hostile CBF files (both layouts): every size and offset is checked before use, so
// each gives a FormatError with the file and byte offset — never a crash, a huge allocation, or a read
// outside the file (run under ASan+UBSan: -DCNTKIO_SANITIZE=ON).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cbf/cbf_test_util.hpp"
#include "cntkio/cbf.hpp"

using namespace cntkio;
using namespace cbf_test;

namespace {

// A valid current-layout file: inputs d (dense float, dim 2) and s (sparse double, dim 5); chunk 0 holds
// two sequences, chunk 1 one. `at` records where the fields the tests corrupt are.
struct Built {
  std::vector<unsigned char> bytes;
  std::map<std::string, size_t> at;
};

Built current_file() {
  Built out;
  Bytes b;
  auto mark = [&](const std::string& name) { out.at[name] = b.size(); };
  b.le<uint64_t>(kCbfMagic).le<uint32_t>(1);
  const size_t chunk0 = b.size();
  mark("length0");
  b.le<uint32_t>(2).le<uint32_t>(1);
  mark("dense_count0");
  b.le<uint32_t>(2).f32(1).f32(2).f32(3).f32(4);
  b.le<uint32_t>(1).f32(5).f32(6);
  b.le<uint32_t>(2);
  mark("nnz0");
  b.le<uint32_t>(3).f64(0.5).f64(1.5).f64(2.5);
  mark("index0");
  b.le<int32_t>(0).le<int32_t>(4).le<int32_t>(2);
  mark("count0");
  b.le<int32_t>(2).le<int32_t>(1);
  b.le<uint32_t>(1).le<uint32_t>(0).le<int32_t>(0);  // sequence 1: one empty sample
  const size_t chunk1 = b.size();
  b.le<uint32_t>(1);
  b.le<uint32_t>(1).f32(7).f32(8);
  b.le<uint32_t>(1).le<uint32_t>(1).f64(9.5).le<int32_t>(3).le<int32_t>(1);
  const size_t header = b.size();
  mark("header_magic");
  b.le<uint64_t>(kCbfMagic);
  mark("num_chunks");
  b.le<uint32_t>(2);
  mark("num_inputs");
  b.le<uint32_t>(2);
  mark("encoding0");
  b.u8(0);
  mark("name_length0");
  b.le<uint32_t>(1).text("d");
  mark("type0");
  b.u8(0);
  mark("dim0");
  b.le<uint32_t>(2);
  b.u8(1).le<uint32_t>(1).text("s").u8(1);
  mark("dim1");
  b.le<uint32_t>(5);
  mark("row0");
  b.le<int64_t>(static_cast<int64_t>(chunk0)).le<uint32_t>(2).le<uint32_t>(3);
  mark("row1");
  b.le<int64_t>(static_cast<int64_t>(chunk1)).le<uint32_t>(1).le<uint32_t>(1);
  mark("trailer");
  b.le<int64_t>(static_cast<int64_t>(header));
  out.bytes = b.data;
  return out;
}

// A valid legacy file: inputs L (dense float, dim 2) and S (sparse float, dim 4); chunk 0 with two
// sequences, chunk 1 with one.
Built legacy_file() {
  Built out;
  Bytes b;
  auto mark = [&](const std::string& name) { out.at[name] = b.size(); };
  b.le<int64_t>(1);
  mark("num_chunks");
  b.le<int64_t>(2);
  mark("num_inputs");
  b.le<int32_t>(2);
  mark("name_length0");
  b.le<int32_t>(1).text("L");
  mark("kind0");
  b.le<int32_t>(0);
  mark("type0");
  b.le<int32_t>(0);
  mark("dim0");
  b.le<int32_t>(2);
  b.le<int32_t>(1).text("S").le<int32_t>(1);
  mark("storage1");
  b.le<int32_t>(0).le<int32_t>(0);
  mark("is_sequence1");
  b.le<int32_t>(1).le<int32_t>(4);
  mark("row0");
  b.le<int64_t>(0).le<int32_t>(2).le<int32_t>(3);
  mark("row1");
  b.le<int64_t>(0).le<int32_t>(1).le<int32_t>(1);  // offset patched below
  const size_t data = b.size();
  b.f32(1).f32(2).f32(3).f32(4);
  mark("nnz0");
  b.le<int32_t>(3).f32(0.5f).f32(1.5f).f32(2.5f);
  mark("rowindex0");
  b.le<int32_t>(1).le<int32_t>(4 + 3).le<int32_t>(2);
  mark("starts0");
  b.le<int32_t>(0).le<int32_t>(2).le<int32_t>(3);
  const size_t chunk1 = b.size() - data;
  b.f32(5).f32(6);
  b.le<int32_t>(1).f32(9.5f).le<int32_t>(3).le<int32_t>(0).le<int32_t>(1);
  out.bytes = b.data;
  std::memcpy(out.bytes.data() + out.at["row1"], &chunk1, 8);
  return out;
}

template <typename T>
std::vector<unsigned char> patched(std::vector<unsigned char> bytes, size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof value);
  return bytes;
}

// Opens `path` and reads every value; returns the snapshot.
std::vector<SequenceSnapshot> read_all(const std::string& path) {
  CbfOptions o;
  o.file = path;
  o.element_type = std::nullopt;
  auto d = make_cbf_deserializer(o);
  return snapshot(*d);
}

// Expects a FormatError for `bytes` whose text contains `text` and whose location is the file at `offset`.
void expect_error(const TempDir& dir, const std::vector<unsigned char>& bytes, const std::string& text,
                  std::optional<uint64_t> offset = std::nullopt) {
  const std::string path = dir.write("bad.bin", bytes);
  try {
    read_all(path);
    ADD_FAILURE() << "expected a FormatError containing: " << text;
  } catch (const FormatError& e) {
    EXPECT_NE(e.cntk_text().find(text), std::string::npos) << e.what();
    EXPECT_EQ(e.location().file, path);
    ASSERT_TRUE(e.location().byte_offset.has_value()) << e.what();
    if (offset) {
      EXPECT_EQ(*e.location().byte_offset, *offset) << e.what();
    }
  }
}

}  // namespace

TEST(CbfCorrupt, TheTestFilesAreValid) {
  TempDir dir;
  const auto current = read_all(dir.write("c.bin", current_file().bytes));
  ASSERT_EQ(current.size(), 3u);
  EXPECT_EQ(current[0].streams[1].indices, (std::vector<int32_t>{0, 4, 2}));
  EXPECT_EQ(current[1].streams[1].counts, (std::vector<uint32_t>{0}));
  EXPECT_EQ(current[2].streams[1].bits, (std::vector<uint64_t>{std::bit_cast<uint64_t>(9.5)}));
  const auto legacy = read_all(dir.write("l.bin", legacy_file().bytes));
  ASSERT_EQ(legacy.size(), 3u);
  EXPECT_EQ(legacy[0].streams[1].indices, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(legacy[0].streams[1].counts, (std::vector<uint32_t>{1, 1}));
  EXPECT_EQ(legacy[2].streams[1].indices, (std::vector<int32_t>{3}));
}

// Truncated at every byte offset: always a FormatError (the trailer, a header field or a chunk is cut).
TEST(CbfCorrupt, TruncatedAtEveryByte) {
  TempDir dir;
  for (const auto& [name, full] :
       {std::pair{"current", current_file().bytes}, std::pair{"legacy", legacy_file().bytes}}) {
    for (size_t size = 0; size < full.size(); ++size) {
      SCOPED_TRACE(std::string(name) + " truncated to " + std::to_string(size) + " bytes");
      const std::string path = dir.write(
          "t.bin", std::vector<unsigned char>(full.begin(), full.begin() + static_cast<long>(size)));
      EXPECT_THROW(read_all(path), FormatError);
    }
  }
}

TEST(CbfCorrupt, CurrentLayoutFieldChecks) {
  TempDir dir;
  const Built f = current_file();
  const auto& at = f.at;
  const uint64_t size = f.bytes.size();
  const uint64_t header = at.at("header_magic");
  expect_error(dir, patched(f.bytes, 0, uint64_t{42}), "not a valid CNTK binary format file", 0);
  expect_error(dir, patched(f.bytes, 8, uint32_t{2}), "Unsupported CNTK binary format version 2", 8);
  expect_error(dir, patched(f.bytes, at.at("trailer"), int64_t(size + 5)),
               "The header offset " + std::to_string(size + 5) + " stored in the trailer is outside the file",
               at.at("trailer"));
  expect_error(dir, patched(f.bytes, at.at("trailer"), int64_t{-1}), "The header offset -1",
               at.at("trailer"));
  expect_error(dir, patched(f.bytes, at.at("trailer"), int64_t{12}),
               "does not start with the CBF magic number", 12);
  expect_error(dir, patched(f.bytes, at.at("num_chunks"), uint32_t{0xFFFFFFFF}),
               "The header declares 4294967295 chunks; the chunk table needs 68719476720 bytes");
  expect_error(dir, patched(f.bytes, at.at("num_inputs"), uint32_t{0xFFFFFFFF}),
               "The header declares 4294967295 inputs", at.at("num_inputs"));
  expect_error(dir, patched(f.bytes, at.at("num_inputs"), uint32_t{0}), "declares no input stream");
  expect_error(dir, patched(f.bytes, at.at("encoding0"), uint8_t{2}), "Unknown encoding type 2 of input 0",
               at.at("encoding0"));
  expect_error(dir, patched(f.bytes, at.at("name_length0"), uint32_t{0x7FFFFFFF}),
               "Unexpected end of data reading an input's name", at.at("name_length0") + 4);
  expect_error(dir, patched(f.bytes, at.at("type0"), uint8_t{7}), "Unknown element type 7 of input 'd'",
               at.at("type0"));
  expect_error(dir, patched(f.bytes, at.at("dim0"), uint32_t{0}), "Input 'd' has sample dimension 0",
               at.at("dim0"));
  expect_error(dir, patched(f.bytes, at.at("dim1"), uint32_t{0x80000000}), "above the maximum 2147483647",
               at.at("dim1"));
  // Offsets past the end, before the prefix, out of order.
  expect_error(dir, patched(f.bytes, at.at("row1"), int64_t{99999}),
               "Chunk 1 offset 99999 beyond the end of the chunk data (the header starts at byte " +
                   std::to_string(header) + ", file size " + std::to_string(size) + ").",
               at.at("row1"));
  expect_error(dir, patched(f.bytes, at.at("row0"), int64_t{-7}),
               "Chunk 0 offset -7 lies before the end of the 12-byte", at.at("row0"));
  int64_t chunk1;
  std::memcpy(&chunk1, f.bytes.data() + at.at("row1"), 8);
  expect_error(dir, patched(patched(f.bytes, at.at("row0"), chunk1), at.at("row1"), int64_t{12}),
               "Chunk 1 offset 12 is smaller than chunk 0 offset", at.at("row1"));
  // Counts that cannot fit into the chunk's bytes (checked before anything is allocated).
  expect_error(dir, patched(f.bytes, at.at("row0") + 8, uint32_t{0xFFFFFFFF}),
               "Chunk 0 declares 4294967295 sequences", at.at("row0"));
  expect_error(dir, patched(f.bytes, at.at("dense_count0"), uint32_t{0x40000000}),
               "claims 1073741824 samples", at.at("dense_count0"));
  expect_error(dir, patched(f.bytes, at.at("nnz0"), uint32_t{0x7FFFFFFF}), "claims nnz 2147483647",
               at.at("nnz0"));
  // Negative and inconsistent per-sample nnz counts, row indices outside the dimension.
  expect_error(dir, patched(f.bytes, at.at("count0"), int32_t{-1}), "has a negative nnz count -1",
               at.at("count0"));
  expect_error(dir, patched(f.bytes, at.at("count0"), int32_t{1}), "add up to 2, but its nnz is 3",
               at.at("count0"));
  expect_error(dir, patched(f.bytes, at.at("index0") + 4, int32_t{5}), "Row index 5 of sequence 0 of chunk 0",
               at.at("index0") + 4);
  expect_error(dir, patched(f.bytes, at.at("index0"), int32_t{-2}), "Row index -2", at.at("index0"));
  // Sequence lengths that disagree with the chunk table.
  expect_error(dir, patched(f.bytes, at.at("length0"), uint32_t{5}),
               "add up to 6 samples, but its chunk table row (byte offset " + std::to_string(at.at("row0")) +
                   ") says 3.",
               at.at("row0"));
}

TEST(CbfCorrupt, LegacyLayoutFieldChecks) {
  TempDir dir;
  const Built f = legacy_file();
  const auto& at = f.at;
  expect_error(dir, patched(f.bytes, at.at("num_chunks"), int64_t{-3}), "Negative number of chunks -3", 8);
  expect_error(dir, patched(f.bytes, at.at("num_chunks"), int64_t{1} << 60),
               "chunks; the offsets table needs");
  expect_error(dir, patched(f.bytes, at.at("num_inputs"), int32_t{0}), "at least one is needed");
  expect_error(dir, patched(f.bytes, at.at("num_inputs"), int32_t{0x7FFFFFFF}), "inputs; their headers need");
  expect_error(dir, patched(f.bytes, at.at("name_length0"), int32_t{-1}), "Negative name length -1");
  expect_error(dir, patched(f.bytes, at.at("kind0"), int32_t{3}), "Unknown deserializer type 3",
               at.at("kind0"));
  expect_error(dir, patched(f.bytes, at.at("type0"), int32_t{2}), "Unknown element type 2", at.at("type0"));
  expect_error(dir, patched(f.bytes, at.at("dim0"), int32_t{-4}), "has sample dimension -4", at.at("dim0"));
  expect_error(dir, patched(f.bytes, at.at("storage1"), int32_t{1}), "Unsupported storage type 1",
               at.at("storage1"));
  expect_error(dir, patched(f.bytes, at.at("is_sequence1"), int32_t{2}), "Invalid isSequence flag 2");
  expect_error(dir, patched(f.bytes, at.at("row0"), int64_t{-1}), "negative offset", at.at("row0"));
  expect_error(dir, patched(f.bytes, at.at("row1"), int64_t{1000}), "Chunk 1 offset", at.at("row1"));
  expect_error(dir, patched(f.bytes, at.at("row0") + 8, int32_t{-2}), "negative count", at.at("row0"));
  expect_error(dir,
               patched(patched(f.bytes, at.at("row0") + 8, int32_t{0x7FFFFFFF}), at.at("row0") + 12,
                       int32_t{0x7FFFFFFF}),
               "Chunk 0 declares 2147483647 sequences");
  expect_error(dir, patched(f.bytes, at.at("nnz0"), int32_t{-5}), "has a negative nnz -5", at.at("nnz0"));
  expect_error(dir, patched(f.bytes, at.at("nnz0"), int32_t{0x7FFFFFFF}), "claims nnz 2147483647",
               at.at("nnz0"));
  expect_error(dir, patched(f.bytes, at.at("rowindex0"), int32_t{-1}), "is negative", at.at("rowindex0"));
  expect_error(
      dir, patched(patched(f.bytes, at.at("rowindex0"), int32_t{5}), at.at("rowindex0") + 4, int32_t{0}),
      "goes back to sample 0 after sample 1; entries must be ordered by sample", at.at("rowindex0") + 4);
  expect_error(dir, patched(f.bytes, at.at("rowindex0") + 4, int32_t{0x7FFFFFFF}),
               "more samples than the file can describe");
  expect_error(dir, patched(f.bytes, at.at("starts0") + 4, int32_t{9}), "decrease or exceed nnz");
  expect_error(dir, patched(f.bytes, at.at("starts0"), int32_t{1}), "must begin with 0 and end with nnz 3");
}

TEST(CbfCorrupt, NotACbfFile) {
  TempDir dir;
  expect_error(dir, std::vector<unsigned char>{'|', 'a', ' ', '1', '\n'},
               "too short for the 8-byte magic number", 0);
  const std::string ctf = "|features 1 2 3\n|features 4 5 6\n";
  expect_error(dir, std::vector<unsigned char>(ctf.begin(), ctf.end()), "not a valid CNTK binary format file",
               0);
  EXPECT_FALSE(detect_cbf_layout(dir.write("ctf.txt", ctf)));
}

// Random single-byte and multi-byte corruption: either the file still reads or a FormatError says why.
TEST(CbfCorrupt, RandomCorruptionNeverCrashes) {
  TempDir dir;
  std::mt19937_64 rng(4242);
  size_t errors = 0, readable = 0;
  for (const std::vector<unsigned char>& valid : {current_file().bytes, legacy_file().bytes}) {
    for (int i = 0; i < 1500; ++i) {
      std::vector<unsigned char> bytes = valid;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < flips; ++k) {
        const size_t at = rng() % bytes.size();
        bytes[at] = rng() % 3 == 0 ? 0xFF : static_cast<unsigned char>(rng());
      }
      const std::string path = dir.write("r.bin", bytes);
      try {
        read_all(path);
        ++readable;
      } catch (const FormatError&) {
        ++errors;
      }
    }
  }
  // Values-only corruption keeps a file readable; structural corruption does not.
  EXPECT_GT(errors, 1000u);
  EXPECT_GT(readable, 100u);
}
