// Property tests of the converters over generated files: CTF -> CBF -> CTF, CBF -> legacy -> CBF and
// CTF -> legacy -> CTF give the same sequences, sample counts, sparse entries and bit-identical values;
// and the CTF number spelling reads back exactly through CNTK's parser (spec ctf.md §6.6).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cbf/cbf_test_util.hpp"
#include "cntkio/cbf.hpp"
#include "cntkio/convert.hpp"
#include "cntkio/ctf.hpp"

using namespace cntkio;
using namespace cbf_test;

namespace {

struct GenStream {
  std::string name;
  std::string alias;
  size_t dim;
  StorageFormat storage;
};

struct GenOptions {
  bool legacy_compatible = false;  // dense: one sample per sequence; sparse: last sample not empty
  bool with_ids = true;
  int sequences = 60;
};

// A value spelled the way CTF files in the wild spell them.
std::string random_value(std::mt19937_64& rng, ElementType type) {
  char buffer[64];
  const double magnitude =
      std::ldexp(static_cast<double>(rng() >> 11), -53) * std::pow(10.0, static_cast<int>(rng() % 16) - 8);
  const double v = rng() % 2 ? -magnitude : magnitude;
  switch (rng() % 6) {
    case 0:
      std::snprintf(buffer, sizeof buffer, "%.6g", v);
      break;
    case 1:
      std::snprintf(buffer, sizeof buffer, "%d", static_cast<int>(rng() % 2000) - 1000);
      break;
    case 2:
      std::snprintf(buffer, sizeof buffer, "%.3e", v);
      break;
    case 3:
      std::snprintf(buffer, sizeof buffer, "%.9g", v);
      break;
    case 4:
      std::snprintf(buffer, sizeof buffer, "%.17g", v);
      break;
    default:
      std::snprintf(buffer, sizeof buffer, type == ElementType::kDouble ? "%.15f" : "%.6f", v);
      break;
  }
  return buffer;
}

std::string generate_ctf(uint64_t seed, const std::vector<GenStream>& streams, ElementType type,
                         const GenOptions& options) {
  std::mt19937_64 rng(seed);
  std::string text;
  for (int id = 0; id < options.sequences; ++id) {
    std::vector<uint32_t> samples(streams.size());
    uint32_t rows = 0;
    for (size_t s = 0; s < streams.size(); ++s) {
      // Without ids every line is a sequence, so it must hold every stream once.
      samples[s] =
          !options.with_ids || (options.legacy_compatible && streams[s].storage == StorageFormat::kDense)
              ? 1
              : 1 + static_cast<uint32_t>(rng() % (rng() % 4 == 0 ? 12 : 4));  // jagged
      rows = std::max(rows, samples[s]);
    }
    for (uint32_t t = 0; t < rows; ++t) {
      if (options.with_ids) text += std::to_string(1000 + 3 * id);
      for (size_t s = 0; s < streams.size(); ++s) {
        if (t >= samples[s]) continue;
        text += " |" + streams[s].alias;
        if (streams[s].storage == StorageFormat::kDense) {
          for (size_t k = 0; k < streams[s].dim; ++k) text += " " + random_value(rng, type);
          continue;
        }
        size_t entries = rng() % 4;  // 0 = an empty sparse sample
        if (options.legacy_compatible && t + 1 == samples[s] && entries == 0) entries = 1;
        for (size_t e = 0; e < entries; ++e) {
          text += " " + std::to_string(rng() % streams[s].dim) + ":" + random_value(rng, type);
        }
      }
      text += "\n";
    }
  }
  return text;
}

std::vector<CtfStreamOptions> ctf_streams(const std::vector<GenStream>& streams, bool alias_is_name) {
  std::vector<CtfStreamOptions> out;
  for (const GenStream& g : streams) {
    CtfStreamOptions s;
    s.name = g.name;
    s.alias = alias_is_name ? g.name : g.alias;
    s.dim = g.dim;
    s.storage = g.storage;
    out.push_back(s);
  }
  return out;
}

std::vector<SequenceSnapshot> read_ctf(const std::string& file, std::vector<CtfStreamOptions> streams,
                                       ElementType type) {
  CtfOptions o;
  o.file = file;
  o.streams = std::move(streams);
  o.element_type = type;
  o.trace_level = 0;
  auto d = make_ctf_deserializer(o);
  return snapshot(*d);
}

std::vector<SequenceSnapshot> read_cbf(const std::string& file) {
  CbfOptions o;
  o.file = file;
  o.element_type = std::nullopt;
  auto d = make_cbf_deserializer(o);
  return snapshot(*d);
}

// Same sequences in the same order: lengths and every stream's data (keys are not compared: CBF keys are
// sequence indices, CTF keys the ids in the file).
void expect_same(const std::vector<SequenceSnapshot>& a, const std::vector<SequenceSnapshot>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].length, b[i].length) << "sequence " << i;
    ASSERT_EQ(a[i].streams.size(), b[i].streams.size());
    for (size_t s = 0; s < a[i].streams.size(); ++s) {
      ASSERT_EQ(a[i].streams[s], b[i].streams[s]) << "sequence " << i << " stream " << s;
    }
  }
}

ConvertOptions to(DataFormat format, const std::vector<GenStream>& streams, ElementType type, bool from_ctf) {
  ConvertOptions o;
  o.to = format;
  o.chunk_size_in_bytes = 700;  // many chunks
  o.element_type = type;
  o.log = [](std::string_view line) { ADD_FAILURE() << "unexpected converter message: " << line; };
  if (from_ctf) {
    for (const GenStream& g : streams) o.streams.push_back(ConvertStream{g.name, g.alias, g.dim, g.storage});
  }
  return o;
}

const std::vector<GenStream> kMixed = {{"features", "f", 3, StorageFormat::kDense},
                                       {"words", "w", 50, StorageFormat::kSparseCsc},
                                       {"labels", "l", 2, StorageFormat::kDense}};

}  // namespace

TEST(CbfRoundTrip, CtfToCbfToCtf) {
  TempDir dir;
  int files = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    for (ElementType type : {ElementType::kFloat, ElementType::kDouble}) {
      const std::vector<GenStream> streams =
          seed % 3 == 0   ? std::vector<GenStream>{{"x", "x", 7, StorageFormat::kDense}}
          : seed % 3 == 1 ? std::vector<GenStream>{{"s", "sp", 1000, StorageFormat::kSparseCsc}}
                          : kMixed;
      GenOptions g;
      g.with_ids = seed % 4 != 0;  // id-less files: one sequence per line
      SCOPED_TRACE("seed " + std::to_string(seed) + ", " + to_string(type));
      const std::string ctf = dir.write("in.ctf", generate_ctf(seed, streams, type, g));
      const auto original = read_ctf(ctf, ctf_streams(streams, false), type);
      ASSERT_GT(original.size(), 0u);

      const std::string cbf = dir.file("mid.bin");
      const ConvertSummary s1 =
          convert_file(ctf, DataFormat::kCtf, cbf, to(DataFormat::kCbf, streams, type, true));
      EXPECT_EQ(s1.sequences, original.size());
      EXPECT_GT(s1.chunks, 1u);
      const auto middle = read_cbf(cbf);
      expect_same(original, middle);

      const std::string back = dir.file("out.ctf");
      convert_file(cbf, DataFormat::kCbf, back, to(DataFormat::kCtf, streams, type, false));
      expect_same(original, read_ctf(back, ctf_streams(streams, true), type));
      ++files;
    }
  }
  EXPECT_EQ(files, 24);
}

// Legacy CBF holds dense streams of one sample per sequence and sparse sequences whose last sample has
// an entry; for such data, current -> legacy -> current reproduces the file byte for byte.
TEST(CbfRoundTrip, CbfToLegacyToCbf) {
  TempDir dir;
  for (uint64_t seed = 20; seed < 26; ++seed) {
    for (ElementType type : {ElementType::kFloat, ElementType::kDouble}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", " + to_string(type));
      GenOptions g;
      g.legacy_compatible = true;
      const std::string ctf = dir.write("in.ctf", generate_ctf(seed, kMixed, type, g));
      const std::string first = dir.file("first.bin");
      convert_file(ctf, DataFormat::kCtf, first, to(DataFormat::kCbf, kMixed, type, true));
      const std::string legacy = dir.file("legacy.cbf1");
      const ConvertSummary s =
          convert_file(first, DataFormat::kCbf, legacy, to(DataFormat::kCbfLegacy, kMixed, type, false));
      EXPECT_GT(s.chunks, 1u);
      EXPECT_EQ(*detect_cbf_layout(legacy), CbfLayout::kLegacyV1);
      const auto a = read_cbf(first);
      const auto b = read_cbf(legacy);
      expect_same(a, b);
      const std::string again = dir.file("again.bin");
      convert_file(legacy, DataFormat::kCbfLegacy, again, to(DataFormat::kCbf, kMixed, type, false));
      EXPECT_EQ(read_bytes(again), read_bytes(first));
    }
  }
}

TEST(CbfRoundTrip, CtfToLegacyToCtf) {
  TempDir dir;
  for (uint64_t seed = 40; seed < 44; ++seed) {
    const ElementType type = seed % 2 ? ElementType::kFloat : ElementType::kDouble;
    GenOptions g;
    g.legacy_compatible = true;
    const std::string ctf = dir.write("in.ctf", generate_ctf(seed, kMixed, type, g));
    const auto original = read_ctf(ctf, ctf_streams(kMixed, false), type);
    const std::string legacy = dir.file("mid.cbf1");
    convert_file(ctf, DataFormat::kCtf, legacy, to(DataFormat::kCbfLegacy, kMixed, type, true));
    expect_same(original, read_cbf(legacy));
    const std::string back = dir.file("out.ctf");
    convert_file(legacy, DataFormat::kCbfLegacy, back, to(DataFormat::kCtf, kMixed, type, false));
    expect_same(original, read_ctf(back, ctf_streams(kMixed, true), type));
  }
}

// A CTF stream read as float and written as double CBF keeps its values exactly.
TEST(CbfRoundTrip, FloatInputToDoubleOutput) {
  TempDir dir;
  const std::string ctf = dir.write("in.ctf", generate_ctf(7, kMixed, ElementType::kFloat, GenOptions{}));
  const auto original = read_ctf(ctf, ctf_streams(kMixed, false), ElementType::kFloat);
  ConvertOptions o = to(DataFormat::kCbf, kMixed, ElementType::kFloat, true);
  convert_file(ctf, DataFormat::kCtf, dir.file("f.bin"), o);
  o = to(DataFormat::kCbf, kMixed, ElementType::kDouble, false);
  convert_file(dir.file("f.bin"), DataFormat::kCbf, dir.file("d.bin"), o);
  const auto widened = read_cbf(dir.file("d.bin"));
  ASSERT_EQ(widened.size(), original.size());
  for (size_t i = 0; i < original.size(); ++i) {
    for (size_t s = 0; s < kMixed.size(); ++s) {
      const auto& a = original[i].streams[s].bits;
      const auto& b = widened[i].streams[s].bits;
      ASSERT_EQ(a.size(), b.size());
      for (size_t k = 0; k < a.size(); ++k) {
        ASSERT_EQ(static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(a[k]))),
                  std::bit_cast<double>(b[k]));
      }
    }
  }
}

TEST(CtfNumbers, ParserFollowsCntksFormula) {
  EXPECT_EQ(*ctf_parse_number("45."), 45.0);
  EXPECT_EQ(*ctf_parse_number("-6.4265e+020"), -(6.0 + 4265.0 / 10000.0) * 1e20);
  EXPECT_EQ(*ctf_parse_number("1E+05"), 1e5);
  // Not strtod: the formula is one ulp away here (spec ctf.md §6.6).
  EXPECT_EQ(std::bit_cast<uint64_t>(*ctf_parse_number("71.792817565")), 0x4051f2bd85e257a4ull);
  EXPECT_TRUE(std::signbit(*ctf_parse_number("-0")));
  for (const char* bad : {".5", "inf", "nan", "1e", "1e+", "2,0", "5.e3", ""}) {
    EXPECT_FALSE(ctf_parse_number(bad)) << bad;
  }
}

TEST(CtfNumbers, SpellingsReadBackExactly) {
  // Shortest spellings where they read back.
  EXPECT_EQ(ctf_number_text(0.1f, ElementType::kFloat), "0.1");
  EXPECT_EQ(ctf_number_text(1e-5f, ElementType::kFloat), "1e-05");
  EXPECT_EQ(ctf_number_text(-2.0, ElementType::kDouble), "-2");
  EXPECT_EQ(ctf_number_text(HUGE_VAL, ElementType::kDouble), "1e999");
  EXPECT_EQ(ctf_number_text(-HUGE_VAL, ElementType::kFloat), "-1e999");
  EXPECT_TRUE(std::isnan(*ctf_parse_number(ctf_number_text(std::nan(""), ElementType::kDouble))));
  // 71.792817565 parses to a double whose shortest spelling ("71.792817565000004" or so) is not that
  // text; a spelling that reads back exactly is found.
  const double odd = *ctf_parse_number("71.792817565");
  EXPECT_EQ(std::bit_cast<uint64_t>(*ctf_parse_number(ctf_number_text(odd, ElementType::kDouble))),
            std::bit_cast<uint64_t>(odd));

  std::mt19937_64 rng(99);
  for (int i = 0; i < 200000; ++i) {
    const auto bits = static_cast<uint32_t>(rng());
    const float f = std::bit_cast<float>(bits);
    if (!std::isfinite(f)) continue;
    const std::string text = ctf_number_text(f, ElementType::kFloat);
    ASSERT_EQ(std::bit_cast<uint32_t>(static_cast<float>(*ctf_parse_number(text))), bits) << text;
  }
  char buffer[64];
  for (int i = 0; i < 50000; ++i) {
    // Doubles as CNTK's parser produces them from text with up to 17 digits.
    std::snprintf(buffer, sizeof buffer, "%.*g", 1 + static_cast<int>(rng() % 17),
                  std::ldexp(static_cast<double>(rng() >> 11), -53) *
                      std::pow(10.0, static_cast<int>(rng() % 40) - 20));
    const std::optional<double> v = ctf_parse_number(buffer);
    ASSERT_TRUE(v) << buffer;
    const std::string text = ctf_number_text(*v, ElementType::kDouble);
    ASSERT_EQ(std::bit_cast<uint64_t>(*ctf_parse_number(text)), std::bit_cast<uint64_t>(*v))
        << buffer << " -> " << text;
  }
}
