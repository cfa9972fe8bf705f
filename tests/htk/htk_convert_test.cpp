// convert_to_htk: CTF sequences written as HTK files + SCP and read back by the HTK feature deserializer.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/htk.hpp"
#include "htk_corpus.hpp"

using namespace cntkio;
using htk_test::TempDir;

namespace {

struct CtfCorpus {
  std::string file;
  std::vector<std::string> keys;
  std::vector<std::vector<float>> values;  // per sequence, frames x dim
};

// Sequences with ids 10, 11, ... of 1-9 rows of `dim` values with 3 decimals (exact in CTF and float).
CtfCorpus write_ctf(const TempDir& dir, size_t sequences, size_t dim) {
  std::mt19937 rng(13);
  CtfCorpus c;
  std::string text;
  for (size_t s = 0; s < sequences; ++s) {
    const size_t rows = 1 + rng() % 9;
    c.keys.push_back(std::to_string(10 + s));
    c.values.emplace_back();
    for (size_t r = 0; r < rows; ++r) {
      text += c.keys.back() + " |x";
      for (size_t k = 0; k < dim; ++k) {
        const int milli = static_cast<int>(rng() % 20001) - 10000;
        char number[32];
        std::snprintf(number, sizeof number, " %.3f", milli / 1000.0);
        text += number;
        c.values.back().push_back(std::strtof(number, nullptr));
      }
      text += " |y 1\n";
    }
  }
  c.file = dir.write("in.ctf", text);
  return c;
}

std::shared_ptr<Deserializer> ctf_source(const CtfCorpus& c, size_t dim) {
  CtfOptions o;
  o.file = c.file;
  CtfStreamOptions s;
  s.name = "x";
  s.dim = dim;
  o.streams.push_back(s);
  o.trace_level = 0;
  return make_ctf_deserializer(o);
}

// Reads the SCP back in sequence mode: key -> values.
std::map<std::string, std::vector<float>> read_back(const std::string& scp, size_t dim) {
  HtkFeatureOptions o;
  o.name = "features";
  o.scp_file = scp;
  o.dim = dim;
  o.frame_mode = false;
  o.trace_level = 0;
  auto d = make_htk_feature_deserializer(o);
  std::map<std::string, std::vector<float>> out;
  for (const ChunkInfo& c : d->chunk_infos()) {
    std::vector<SequenceInfo> infos;
    d->sequence_infos_for_chunk(c.id, infos);
    const ChunkPtr chunk = d->load_chunk(c.id);
    for (const SequenceInfo& s : infos) {
      std::vector<SequenceData> data;
      chunk->get_sequence(s.index_in_chunk, data);
      const auto* v = static_cast<const float*>(data[0].values);
      out[d->key_to_string(s.key)] = std::vector<float>(v, v + data[0].number_of_samples * dim);
    }
  }
  return out;
}

}  // namespace

TEST(HtkConvert, CtfSequencesRoundTripExactlyThroughFilesAndArchives) {
  TempDir dir;
  const CtfCorpus corpus = write_ctf(dir, 25, 13);
  for (bool archive : {false, true}) {
    for (bool big_endian : {false, true}) {
      auto source = ctf_source(corpus, 13);
      HtkConvertOptions o;
      o.scp_file = dir.file(std::string("out_") + (archive ? "a" : "f") + (big_endian ? "b" : "l") + ".scp");
      o.archive = archive;
      o.write.big_endian = big_endian;
      o.write.kind = HtkBaseKind::kFbank;
      const HtkConvertResult r = convert_to_htk(*source, 0, o);
      EXPECT_EQ(r.utterances, 25u);
      const std::map<std::string, std::vector<float>> back = read_back(o.scp_file, 13);
      ASSERT_EQ(back.size(), 25u);
      for (size_t s = 0; s < corpus.keys.size(); ++s) {
        ASSERT_EQ(back.at(corpus.keys[s]), corpus.values[s]) << corpus.keys[s];
      }
      // The SCP refers to the files relative to itself ("..." expands to the SCP's folder).
      std::ifstream scp(o.scp_file);
      std::string first;
      std::getline(scp, first);
      EXPECT_EQ(first.substr(0, first.find(".../")), "10.fea=");
    }
  }
}

TEST(HtkConvert, CompressedOutputIsWithinOneQuantisationStep) {
  TempDir dir;
  const CtfCorpus corpus = write_ctf(dir, 12, 5);
  for (bool archive : {false, true}) {
    auto source = ctf_source(corpus, 5);
    HtkConvertOptions o;
    o.scp_file = dir.file(archive ? "ca.scp" : "cf.scp");
    o.archive = archive;
    o.write.compressed = true;
    convert_to_htk(*source, 0, o);
    const std::map<std::string, std::vector<float>> back = read_back(o.scp_file, 5);
    for (size_t s = 0; s < corpus.keys.size(); ++s) {
      const std::vector<float>& got = back.at(corpus.keys[s]);
      ASSERT_EQ(got.size(), corpus.values[s].size());
      // Values span [-10, 10]: one step of 20 / 65534.
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], corpus.values[s][i], 20.0 / 65534 + 1e-6);
    }
  }
}

TEST(HtkConvert, SparseStreamsAndBadExtensionsAreRejected) {
  TempDir dir;
  const std::string file = dir.write("s.ctf", "0 |x 1:1\n");
  CtfOptions o;
  o.file = file;
  CtfStreamOptions s;
  s.name = "x";
  s.dim = 3;
  s.storage = StorageFormat::kSparseCsc;
  o.streams.push_back(s);
  auto sparse = make_ctf_deserializer(o);
  HtkConvertOptions h;
  h.scp_file = dir.file("s.scp");
  EXPECT_THROW(convert_to_htk(*sparse, 0, h), UsageError);
  const CtfCorpus corpus = write_ctf(dir, 2, 2);
  auto dense = ctf_source(corpus, 2);
  h.extension = "a.b";
  EXPECT_THROW(convert_to_htk(*dense, 0, h), UsageError);
  h.extension = "fea";
  h.output_dir = dir.file("x...y");  // an SCP reader would replace the "..." by the SCP's folder
  EXPECT_THROW(convert_to_htk(*dense, 0, h), UsageError);
  EXPECT_FALSE(std::filesystem::exists(h.output_dir));
}

TEST(HtkConvert, ExtensionsWithLineEndsAreRejected) {
  TempDir dir;
  const CtfCorpus corpus = write_ctf(dir, 2, 2);
  auto dense = ctf_source(corpus, 2);
  for (const std::string& ext : {std::string("fea\nx"), std::string("fea\r"), std::string("fe\0a", 4)}) {
    HtkConvertOptions h;
    h.scp_file = dir.file("e.scp");
    h.extension = ext;
    EXPECT_THROW(convert_to_htk(*dense, 0, h), UsageError);
    EXPECT_FALSE(std::filesystem::exists(h.scp_file));
  }
}

// Every period written is either refused before anything is written or read back with the same frames: HTK
// stores it as a signed 32-bit count, and readers take the byte order from it.
TEST(HtkConvert, FramePeriodsAreRefusedUnlessTheyReadBackRight) {
  TempDir dir;
  const CtfCorpus corpus = write_ctf(dir, 3, 4);
  const std::vector<uint32_t> periods = {0u,          1u,          256u,        100000u,     0x00010000u,
                                         0x01000000u, 0x7FFFFFFFu, 0x80000000u, 3000000000u, 0xFFFFFFFFu};
  size_t written = 0;
  for (const uint32_t period : periods) {
    for (const bool big_endian : {false, true}) {
      auto source = ctf_source(corpus, 4);
      HtkConvertOptions o;
      o.scp_file = dir.file("p" + std::to_string(period) + (big_endian ? "b" : "l") + ".scp");
      o.write.sample_period = period;
      o.write.big_endian = big_endian;
      const bool misread =
          big_endian ? !(period < __builtin_bswap32(period)) : __builtin_bswap32(period) < period;
      if (period == 0 || period > 0x7FFFFFFFu || misread) {
        EXPECT_THROW(convert_to_htk(*source, 0, o), UsageError) << period << " " << big_endian;
        EXPECT_FALSE(std::filesystem::exists(o.scp_file));
        continue;
      }
      convert_to_htk(*source, 0, o);
      ++written;
      const std::map<std::string, std::vector<float>> back = read_back(o.scp_file, 4);
      for (size_t s = 0; s < corpus.keys.size(); ++s) {
        ASSERT_EQ(back.at(corpus.keys[s]), corpus.values[s]) << period << " " << big_endian;
      }
    }
  }
  EXPECT_GE(written, 8u);  // the usual periods stay writable both ways
}

// HTK's 16-bit compression scales each dimension by its range: an infinite value or a range wider than a
// float would make every value of the dimension decode as NaN, so the conversion is refused.
TEST(HtkConvert, CompressionRefusesRangesItCannotScale) {
  TempDir dir;
  int run = 0;
  for (const std::string& rows :
       {std::string("0 |x 1 2\n0 |x 1e999 0\n0 |x 3 4\n"), std::string("0 |x 3e38 2\n0 |x -3e38 0\n")}) {
    for (const bool archive : {false, true}) {
      CtfCorpus corpus;
      corpus.file = dir.write("c.ctf", rows);
      auto source = ctf_source(corpus, 2);
      HtkConvertOptions o;
      o.scp_file = dir.file("c" + std::to_string(run++) + ".scp");
      o.archive = archive;
      o.write.compressed = true;
      EXPECT_THROW(convert_to_htk(*source, 0, o), UsageError) << rows;
      EXPECT_FALSE(std::filesystem::exists(o.scp_file));
      o.write.compressed = false;  // uncompressed, the same values are written as they are
      EXPECT_NO_THROW(convert_to_htk(*ctf_source(corpus, 2), 0, o));
    }
  }
}
