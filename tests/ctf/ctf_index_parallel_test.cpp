// The CTF index built by several threads (runs of the file scanned side by side, then joined) must equal the
// index one thread builds, sequence for sequence, and fail with the same error where one thread fails.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "formats/ctf/ctf_index.hpp"

namespace cntkio::ctf {
namespace {

// Text with the cases that meet at a run boundary: sequences of many lines, lines without an id inside a
// sequence, an id used again later (a new sequence), lines without the main stream `a` (a sequence of only
// those is dropped), blank lines, a last line without its line feed, digits that run into the end of file.
std::string random_ctf(std::mt19937_64& rng, bool with_ids) {
  std::string text;
  if (rng() % 4 == 0) text += "\xEF\xBB\xBF";
  if (rng() % 3 == 0) text += " \n\n";
  const size_t sequences = 1 + rng() % 60;
  uint64_t id = rng() % 5;
  for (size_t s = 0; s < sequences; ++s) {
    if (rng() % 5 != 0) id += 1 + rng() % 3;  // else the same id again: it continues the sequence
    if (rng() % 9 == 0) id = rng() % 4;       // an id seen before, later in the file
    const size_t lines = 1 + rng() % 6;
    for (size_t l = 0; l < lines; ++l) {
      const bool id_on_line = with_ids && (l == 0 || rng() % 4 != 0);
      std::string line = id_on_line ? std::to_string(id) + " " : (rng() % 2 ? "\t" : "");
      switch (rng() % 5) {
        case 0:
          line += "|b 1 2";  // not the main stream
          break;
        case 1:
          line += "|a 3 |b 4:1";
          break;
        case 2:
          line += "|ab 5";  // |ab is not |a
          break;
        default:
          line += "|a " + std::to_string(rng() % 100);
      }
      if (rng() % 11 == 0) line += "\r";
      text += line + "\n";
      if (rng() % 13 == 0) text += "\n";
    }
  }
  switch (rng() % 4) {
    case 0:
      text.pop_back();  // no final line feed
      break;
    case 1:
      text += "123";  // digits up to the end of the file: not an id
      break;
    default:
      break;
  }
  return text;
}

struct Outcome {
  std::vector<IndexedSequence> sequences;
  bool line_mode = false;
  std::optional<std::string> error;
};

Outcome index_with(const std::string& text, bool skip_ids, const std::string& alias, size_t threads,
                   uint64_t split) {
  Outcome out;
  const std::string file = "t.ctf";
  try {
    CtfIndex index = build_index(text, file, skip_ids, alias, nullptr, threads, split);
    index.sequences.decode(0, index.sequences.size(), out.sequences);
    out.line_mode = index.line_mode;
  } catch (const FormatError& e) {
    out.error = e.what();
  }
  return out;
}

void expect_same(const Outcome& serial, const Outcome& parallel, const std::string& what) {
  ASSERT_EQ(serial.error, parallel.error) << what;
  ASSERT_EQ(serial.line_mode, parallel.line_mode) << what;
  ASSERT_EQ(serial.sequences.size(), parallel.sequences.size()) << what;
  for (size_t i = 0; i < serial.sequences.size(); ++i) {
    const IndexedSequence& a = serial.sequences[i];
    const IndexedSequence& b = parallel.sequences[i];
    ASSERT_EQ(a.key, b.key) << what << " sequence " << i;
    ASSERT_EQ(a.offset, b.offset) << what << " sequence " << i;
    ASSERT_EQ(a.samples, b.samples) << what << " sequence " << i;
    ASSERT_EQ(a.size, b.size) << what << " sequence " << i;
  }
}

TEST(CtfParallelIndex, EqualsTheSerialIndexForEveryThreadCountAndRunSize) {
  std::mt19937_64 rng(2026);
  size_t parallel_runs = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const bool with_ids = trial % 3 != 0;
    const bool skip_ids = !with_ids && trial % 2 == 0;
    const std::string text = random_ctf(rng, with_ids);
    const std::string alias = trial % 2 == 0 ? "a" : "";
    const Outcome serial = index_with(text, skip_ids, alias, 1, 1);
    for (size_t threads : {2, 3, 8}) {
      for (uint64_t split : {1, 7, 64}) {
        const std::string what = "trial " + std::to_string(trial) + ", " + std::to_string(threads) +
                                 " threads, runs of " + std::to_string(split) + " bytes";
        expect_same(serial, index_with(text, skip_ids, alias, threads, split), what);
        if (text.size() / split >= 2) ++parallel_runs;
      }
    }
  }
  EXPECT_GT(parallel_runs, 500u);  // most comparisons really split the file
}

TEST(CtfParallelIndex, ErrorsAreTheSerialOnes) {
  const std::vector<std::string> texts = {
      "|a 1\n1 |a 2\n",                                  // no id on the first line (id mode from a digit)
      "1 |a 1\n2 |a 2\n99999999999999999999999 |a 3\n",  // id overflow in a later run
      "5 |a 1\n6 |a 2\n7 |a 3\n8 |a 4\n",                // fine
  };
  for (const std::string& text : texts) {
    const Outcome serial = index_with(text, false, "", 1, 1);
    for (size_t threads : {2, 4}) expect_same(serial, index_with(text, false, "", threads, 1), text);
  }
  EXPECT_TRUE(index_with(texts[1], false, "", 4, 1).error.has_value());
}

// Through the deserializer: the chunks and their sequences do not depend on index_threads.
TEST(CtfParallelIndex, DeserializerChunksDoNotDependOnIndexThreads) {
  std::mt19937_64 rng(9);
  std::string text;
  for (int s = 0; s < 2000; ++s) {
    for (int l = 0; l <= s % 4; ++l) text += std::to_string(s) + " |a " + std::to_string(rng() % 1000) + "\n";
  }
  const std::string path = ::testing::TempDir() + "/cntkio_parallel_index.ctf";
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(text.data(), 1, text.size(), f), text.size());
    std::fclose(f);
  }
  auto chunks_of = [&](size_t threads) {
    CtfOptions o;
    o.file = path;
    o.streams.push_back(CtfStreamOptions{"a", "", 1, StorageFormat::kDense, false});
    o.chunk_size_in_bytes = 4096;
    o.index_threads = threads;
    o.index_split_bytes = 1000;
    auto d = make_ctf_deserializer(o);
    std::vector<std::pair<uint64_t, uint32_t>> out;
    for (const ChunkInfo& c : d->chunk_infos()) {
      std::vector<SequenceInfo> infos;
      d->sequence_infos_for_chunk(c.id, infos);
      for (const SequenceInfo& s : infos) out.emplace_back(s.key.sequence, c.id);
    }
    return out;
  };
  const auto serial = chunks_of(1);
  EXPECT_EQ(serial.size(), 2000u);
  EXPECT_EQ(chunks_of(4), serial);
  std::remove(path.c_str());
}

// A line whose id text equals its sequence's first id text is taken as the same id without reading the
// number; every other line is read. Ids equal as numbers but not as text, ids that extend another's text,
// and digits that run into the end of the file must come out as the numeric rule says.
TEST(CtfIndexIds, SameTextShortcutKeepsTheNumericRule) {
  const std::string text =
      "7 |a 1\n"          // sequence 7
      "007 |a 2\n"        // the number 7: still sequence 7
      "7|a 3\n"           // the text "7" then '|': still 7
      "70 |a 4\n"         // "7" is a prefix of "70": a new sequence 70
      "|a 5\n"            // no id: continues 70
      "123456789 |a 6\n"  // a new sequence, id of 9 digits (the 8-byte comparison's limit)
      "123456789 |a 7\n"
      "123456788 |a 8\n"  // differs in the ninth digit
      "45 |a 10\n"        // ids of up to 8 digits compare in one 8-byte load: the last digit counts
      "46 |a 11\n"
      "8 |a 9\n"
      "8";  // digits running into EOF are no id: continues 8
  for (size_t threads : {1, 2, 3}) {
    const Outcome out = index_with(text, false, "", threads, 1);
    ASSERT_FALSE(out.error) << *out.error;
    const std::vector<std::pair<uint64_t, uint32_t>> expected = {
        {7, 3}, {70, 2}, {123456789, 2}, {123456788, 1}, {45, 1}, {46, 1}, {8, 2}};
    ASSERT_EQ(out.sequences.size(), expected.size()) << threads << " threads";
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(out.sequences[i].key, expected[i].first) << threads << " threads, sequence " << i;
      EXPECT_EQ(out.sequences[i].samples, expected[i].second) << threads << " threads, sequence " << i;
    }
  }
}

}  // namespace
}  // namespace cntkio::ctf
