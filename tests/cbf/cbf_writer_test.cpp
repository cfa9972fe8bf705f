// Writing CBF: the byte layout of spec cbf.md §1.1 (current) and §3.1 (legacy), chunking by bytes (without
// ctf2bin's one-sequence-per-chunk bug, §2.3), the legacy layout's limits, and partial-file handling.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cbf/cbf_test_util.hpp"
#include "cntkio/cbf.hpp"
#include "cntkio/convert.hpp"

using namespace cntkio;
using namespace cbf_test;

namespace {

const char* kSmallCtf =
    "0 |a 1 2 |b 3:0.5\n"
    "0 |a 3 4\n"
    "1 |a 5 6 |b 0:1 1:2\n";

// The file `cntkio convert` must write for kSmallCtf with streams x:a:2:dense and y:b:5:sparse, built
// field by field from the spec's tables.
std::vector<unsigned char> expected_small_cbf(bool as_double) {
  Bytes b;
  auto value = [&](double v) -> Bytes& { return as_double ? b.f64(v) : b.f32(static_cast<float>(v)); };
  b.le<uint64_t>(0x636e746b5f62696eull);  // magic
  b.le<uint32_t>(1);                      // version
  // chunk 0 at offset 12: sequence lengths (max over inputs), then input x's and input y's records
  b.le<uint32_t>(2).le<uint32_t>(1);
  b.le<uint32_t>(2), value(1), value(2), value(3), value(4);  // x, sequence 0: 2 samples
  b.le<uint32_t>(1), value(5), value(6);                      // x, sequence 1: 1 sample
  b.le<uint32_t>(1).le<uint32_t>(1), value(0.5);              // y, sequence 0: 1 sample, nnz 1
  b.le<int32_t>(3).le<int32_t>(1);                            //    row index, nnz per sample
  b.le<uint32_t>(1).le<uint32_t>(2), value(1), value(2);      // y, sequence 1: 1 sample, nnz 2
  b.le<int32_t>(0).le<int32_t>(1).le<int32_t>(2);
  const uint64_t header = b.size();
  b.le<uint64_t>(0x636e746b5f62696eull).le<uint32_t>(1).le<uint32_t>(2);  // magic, 1 chunk, 2 inputs
  b.u8(0).le<uint32_t>(1).text("x").u8(as_double ? 1 : 0).le<uint32_t>(2);
  b.u8(1).le<uint32_t>(1).text("y").u8(as_double ? 1 : 0).le<uint32_t>(5);
  b.le<int64_t>(12).le<uint32_t>(2).le<uint32_t>(3);  // chunk table row
  b.le<int64_t>(static_cast<int64_t>(header));        // trailer
  return b.data;
}

ConvertOptions small_options(std::optional<ElementType> type) {
  ConvertOptions o;
  o.to = DataFormat::kCbf;
  o.element_type = type;
  o.streams = {parse_convert_stream("x:a:2:dense"), parse_convert_stream("y:b:5:sparse")};
  return o;
}

std::string cli_path() {
  // The unit test binary lives in <build>/tests, the CLI in <build>.
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  return (self.parent_path().parent_path() / "cntkio").string();
}

}  // namespace

TEST(CbfWriter, ConvertWritesTheSpecLayoutByteForByte) {
  TempDir dir;
  const std::string ctf = dir.write("small.ctf", kSmallCtf);
  for (bool as_double : {false, true}) {
    SCOPED_TRACE(as_double ? "double" : "float");
    const std::string out = dir.file(as_double ? "d.bin" : "f.bin");
    const ConvertSummary s = convert_file(
        ctf, DataFormat::kCtf, out, small_options(as_double ? ElementType::kDouble : ElementType::kFloat));
    EXPECT_EQ(read_bytes(out), expected_small_cbf(as_double));
    EXPECT_EQ(s.sequences, 2u);
    EXPECT_EQ(s.samples, 3u);
    EXPECT_EQ(s.chunks, 1u);
    EXPECT_EQ(s.bytes, expected_small_cbf(as_double).size());
    EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
    const CbfHeader h = read_cbf_header(out);
    EXPECT_EQ(h.header_offset, as_double ? 136u : 100u);
  }
}

// The same through the command line (`cntkio convert`), when the CLI has been built next to the tests.
TEST(CbfWriter, CommandLineConvertWritesTheSpecLayoutByteForByte) {
  const std::string cli = cli_path();
  if (!std::filesystem::exists(cli)) GTEST_SKIP() << "the cntkio CLI is not built at " << cli;
  TempDir dir;
  const std::string ctf = dir.write("small.txt", kSmallCtf);
  const std::string out = dir.file("small.bin");
  const std::string command = "'" + cli + "' convert '" + ctf + "' '" + out +
                              "' --stream x:a:2:dense --stream y:b:5:sparse --precision double > /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0);
  EXPECT_EQ(read_bytes(out), expected_small_cbf(true));
  // Missing stream description: exit code 2 (usage), and no output.
  const std::string bad = "'" + cli + "' convert '" + ctf + "' '" + dir.file("x.bin") + "' 2> /dev/null";
  EXPECT_EQ(WEXITSTATUS(std::system(bad.c_str())), 2);
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.bin")));
}

// 100 sequences of 16 bytes each (length 4 + count 4 + two floats) with a 100-byte limit: six per chunk.
// ctf2bin would put every sequence after the first chunk into a chunk of its own.
TEST(CbfWriter, ChunksRespectTheChunkSize) {
  TempDir dir;
  CbfWriterOptions o;
  o.chunk_size_in_bytes = 100;
  CbfWriter w(dir.file("c.bin"), {CbfWriterStream{"x", StorageFormat::kDense, ElementType::kFloat, 2}}, o);
  const float values[2] = {1, 2};
  SequenceData sd;
  sd.number_of_samples = 1;
  sd.values = values;
  for (int i = 0; i < 100; ++i) w.add_sequence({sd}, {ElementType::kFloat});
  // One sequence of 7 samples (4 + 4 + 56 = 64 bytes) fits nowhere but a new chunk; one of 20 samples
  // (168 bytes) exceeds the limit alone and gets a chunk of its own.
  std::vector<float> long_values(40, 3.0f);
  sd.values = long_values.data();
  sd.number_of_samples = 7;
  w.add_sequence({sd}, {ElementType::kFloat});
  sd.number_of_samples = 20;
  w.add_sequence({sd}, {ElementType::kFloat});
  sd.number_of_samples = 1;
  w.add_sequence({sd}, {ElementType::kFloat});
  w.finish();
  const CbfHeader h = read_cbf_header(dir.file("c.bin"));
  ASSERT_EQ(h.chunks.size(), 20u);
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(h.chunks[i].sequences, 6u) << i;
    EXPECT_EQ(h.chunks[i].size, 96u) << i;
    EXPECT_EQ(h.chunks[i].offset, 12 + 96 * i) << i;
  }
  EXPECT_EQ(h.chunks[16].sequences, 4u);  // the 7-sample sequence (64 bytes) would bring it to 128
  EXPECT_EQ(h.chunks[16].size, 64u);
  EXPECT_EQ(h.chunks[17].sequences, 1u);
  EXPECT_EQ(h.chunks[17].samples, 7u);
  EXPECT_EQ(h.chunks[18].sequences, 1u);
  EXPECT_EQ(h.chunks[18].samples, 20u);
  EXPECT_EQ(h.chunks[18].size, 168u);
  EXPECT_EQ(h.chunks[19].sequences, 1u);
  EXPECT_EQ(h.total_sequences(), 103u);
  EXPECT_EQ(h.total_samples(), 100u + 7 + 20 + 1);
}

TEST(CbfWriter, LegacyLayoutByteForByte) {
  TempDir dir;
  CbfWriterOptions o;
  o.layout = CbfLayout::kLegacyV1;
  CbfWriter w(dir.file("l.bin"),
              {CbfWriterStream{"L", StorageFormat::kDense, ElementType::kFloat, 2},
               CbfWriterStream{"S", StorageFormat::kSparseCsc, ElementType::kFloat, 4}},
              o);
  const float dense0[2] = {1, 2}, dense1[2] = {3, 4};
  const float sparse0[2] = {0.5f, 1.5f};
  const int32_t indices0[2] = {1, 3};
  const uint32_t counts0[3] = {1, 0, 1};
  const float sparse1[1] = {2.5f};
  const int32_t indices1[1] = {2};
  const uint32_t counts1[1] = {1};
  SequenceData d0 = dense_data(1, dense0);
  SequenceData d1 = dense_data(1, dense1);
  SequenceData s0 = sparse_data(3, sparse0, indices0, counts0, 2);
  SequenceData s1 = sparse_data(1, sparse1, indices1, counts1, 1);
  w.add_sequence({d0, s0}, {ElementType::kFloat, ElementType::kFloat});
  w.add_sequence({d1, s1}, {ElementType::kFloat, ElementType::kFloat});
  w.finish();
  Bytes b;
  b.le<int64_t>(1).le<int64_t>(1).le<int32_t>(2);
  b.le<int32_t>(1).text("L").le<int32_t>(0).le<int32_t>(0).le<int32_t>(2);
  b.le<int32_t>(1).text("S").le<int32_t>(1).le<int32_t>(0).le<int32_t>(0).le<int32_t>(1).le<int32_t>(4);
  b.le<int64_t>(0).le<int32_t>(2).le<int32_t>(4);  // offset relative to the data, 2 sequences, 3 + 1 samples
  b.f32(1).f32(2).f32(3).f32(4);
  b.le<int32_t>(3).f32(0.5f).f32(1.5f).f32(2.5f);
  b.le<int32_t>(1).le<int32_t>(2 * 4 + 3).le<int32_t>(2);
  b.le<int32_t>(0).le<int32_t>(2).le<int32_t>(3);
  EXPECT_EQ(read_bytes(dir.file("l.bin")), b.data);
  EXPECT_FALSE(std::filesystem::exists(dir.file("l.bin.data")));
}

TEST(CbfWriter, LegacyLayoutRejectsWhatItCannotHold) {
  TempDir dir;
  CbfWriterOptions o;
  o.layout = CbfLayout::kLegacyV1;
  const float values[4] = {1, 2, 3, 4};
  const int32_t indices[2] = {0, 1};
  const uint32_t trailing_empty[2] = {2, 0};
  {
    CbfWriter w(dir.file("a.bin"), {CbfWriterStream{"d", StorageFormat::kDense, ElementType::kFloat, 2}}, o);
    EXPECT_THROW(w.add_sequence({dense_data(2, values)}, {ElementType::kFloat}), UsageError);
  }
  {
    CbfWriter w(dir.file("b.bin"), {CbfWriterStream{"s", StorageFormat::kSparseCsc, ElementType::kFloat, 2}},
                o);
    SequenceData s = sparse_data(2, values, indices, trailing_empty, 2);
    try {
      w.add_sequence({s}, {ElementType::kFloat});
      FAIL() << "expected UsageError";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("an empty last sample"), std::string::npos) << e.what();
    }
    SequenceData none = sparse_data(0, nullptr, nullptr, nullptr, 0);
    EXPECT_THROW(w.add_sequence({none}, {ElementType::kFloat}), UsageError);
  }
  // Writers destroyed before finish() leave nothing behind.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(CbfWriter, RejectsInvalidStreamsAndData) {
  TempDir dir;
  EXPECT_THROW(CbfWriter(dir.file("a.bin"), {}), UsageError);
  EXPECT_THROW(
      CbfWriter(dir.file("a.bin"), {CbfWriterStream{"x", StorageFormat::kDense, ElementType::kFloat, 0}}),
      UsageError);
  EXPECT_THROW(CbfWriter(dir.file("a.bin"),
                         {CbfWriterStream{"x", StorageFormat::kSparseCsc, ElementType::kFloat, 1ull << 31}}),
               UsageError);
  CbfWriter w(dir.file("b.bin"), {CbfWriterStream{"x", StorageFormat::kSparseCsc, ElementType::kFloat, 3}});
  const float values[2] = {1, 2};
  const int32_t bad_index[2] = {0, 3};
  const uint32_t counts[1] = {2};
  const uint32_t too_many[1] = {3};
  EXPECT_THROW(w.add_sequence({sparse_data(1, values, bad_index, counts, 2)}, {ElementType::kFloat}),
               UsageError);
  EXPECT_THROW(w.add_sequence({sparse_data(1, values, bad_index, too_many, 2)}, {ElementType::kFloat}),
               UsageError);
  EXPECT_THROW(w.add_sequence({}, {}), UsageError);
  EXPECT_EQ(w.sequences(), 0u);
}

// A scheduling length beyond the samples of every stream would make a file that the reader refuses.
TEST(CbfWriter, RejectsALengthBeyondTheLongestStream) {
  TempDir dir;
  CbfWriter w(dir.file("a.bin"), {CbfWriterStream{"x", StorageFormat::kDense, ElementType::kFloat, 1}});
  const float values[2] = {1, 2};
  EXPECT_THROW(w.add_sequence({dense_data(2, values)}, {ElementType::kFloat}, 3), UsageError);
  w.add_sequence({dense_data(2, values)}, {ElementType::kFloat},
                 1);  // a shorter one is a definesMBSize choice
  w.finish();
  EXPECT_EQ(w.samples(), 1u);
}

TEST(CbfWriter, ConvertsValueTypes) {
  TempDir dir;
  CbfWriter w(dir.file("t.bin"), {CbfWriterStream{"x", StorageFormat::kDense, ElementType::kFloat, 2},
                                  CbfWriterStream{"y", StorageFormat::kDense, ElementType::kDouble, 1}});
  const double narrow[2] = {0.1, -2.5};
  const float wide[1] = {0.1f};
  w.add_sequence({dense_data(1, narrow), dense_data(1, wide)}, {ElementType::kDouble, ElementType::kFloat});
  w.finish();
  CbfOptions o;
  o.file = dir.file("t.bin");
  o.element_type = std::nullopt;
  auto d = make_cbf_deserializer(o);
  const auto all = snapshot(*d);
  EXPECT_EQ(all[0].streams[0].bits,
            (std::vector<uint64_t>{std::bit_cast<uint32_t>(0.1f), std::bit_cast<uint32_t>(-2.5f)}));
  EXPECT_EQ(all[0].streams[1].bits,
            (std::vector<uint64_t>{std::bit_cast<uint64_t>(static_cast<double>(0.1f))}));
}

TEST(Convert, StreamSpecs) {
  ConvertStream s = parse_convert_stream("features:F:784:dense");
  EXPECT_EQ(s.name, "features");
  EXPECT_EQ(s.alias, "F");
  EXPECT_EQ(s.dim, 784u);
  EXPECT_EQ(s.storage, StorageFormat::kDense);
  s = parse_convert_stream("x::10:Sparse");
  EXPECT_EQ(s.alias, "x");
  EXPECT_EQ(s.storage, StorageFormat::kSparseCsc);
  s = parse_convert_stream("x:y");
  EXPECT_EQ(s.alias, "y");
  EXPECT_EQ(s.dim, 0u);
  EXPECT_FALSE(s.storage);
  EXPECT_THROW(parse_convert_stream("x:y:3"), UsageError);
  EXPECT_THROW(parse_convert_stream(":y:3:dense"), UsageError);
  EXPECT_THROW(parse_convert_stream("x:y:0:dense"), UsageError);
  EXPECT_THROW(parse_convert_stream("x:y:3:csc"), UsageError);
  EXPECT_THROW(parse_convert_stream("x:y:-3:dense"), UsageError);
  EXPECT_EQ(data_format_for_output("a/b.bin"), DataFormat::kCbf);
  EXPECT_EQ(data_format_for_output("b.CBF"), DataFormat::kCbf);
  EXPECT_EQ(data_format_for_output("b.cbf1"), DataFormat::kCbfLegacy);
  EXPECT_EQ(data_format_for_output("b.txt"), DataFormat::kCtf);
  EXPECT_EQ(data_format_for_output("dir.bin/b"), DataFormat::kCtf);
  EXPECT_EQ(parse_data_format("cbf1"), DataFormat::kCbfLegacy);
  EXPECT_FALSE(parse_data_format("tsv"));
}

TEST(Convert, FailuresLeaveNoOutput) {
  TempDir dir;
  // A CBF sequence whose sparse stream has no sample cannot be written as CTF.
  CbfWriter w(dir.file("e.bin"), {CbfWriterStream{"x", StorageFormat::kDense, ElementType::kFloat, 1},
                                  CbfWriterStream{"y", StorageFormat::kSparseCsc, ElementType::kFloat, 4}});
  const float one[1] = {1};
  w.add_sequence({dense_data(1, one), sparse_data(0, nullptr, nullptr, nullptr, 0)},
                 {ElementType::kFloat, ElementType::kFloat});
  w.finish();
  ConvertOptions o;
  o.to = DataFormat::kCtf;
  try {
    convert_file(dir.file("e.bin"), DataFormat::kCbf, dir.file("e.txt"), o);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(
        e.cntk_text(),
        "Stream 'y' of sequence 0 has no sample; CTF cannot represent a stream that is empty in a sequence "
        "(CNTK's text reader rejects it).");
    // what() adds where the sequence is in the input (its entry in chunk 0's length prefix).
    EXPECT_NE(
        std::string(e.what()).find("[file '" + dir.file("e.bin") +
                                   "', byte offset 12, sequence 0] (writing '" + dir.file("e.txt") + "')"),
        std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("e.txt")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("e.txt.partial")));
  // Unknown stream of a CBF input.
  o.streams = {parse_convert_stream("z:q")};
  EXPECT_THROW(convert_file(dir.file("e.bin"), DataFormat::kCbf, dir.file("e.txt"), o), UsageError);
}
