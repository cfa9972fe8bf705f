// Key lookups of a CTF deserializer (a composite reader's secondary): the same answers whether the keys
// ascend (binary search over the compact index, no table) or not (a key table), and whether the index was
// built or read from a cache; a key held twice resolves to its first record and the other is reported.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "cntkio/ctf.hpp"
#include "config/config_test_util.hpp"

using namespace cntkio;
using cntkio::config_test::TempDir;

namespace {

CtfOptions options_for(const std::string& file, bool cache) {
  CtfOptions o;
  o.file = file;
  CtfStreamOptions x;
  x.name = "x";
  x.dim = 1;
  o.streams = {x};
  o.chunk_size_in_bytes = 300;  // many chunks
  o.cache_index = cache;
  o.trace_level = 0;
  return o;
}

// Every sequence as the randomizer lists it: key -> (chunk, index in chunk, samples), first record of a key.
std::map<uint64_t, SequenceInfo> listed(const Deserializer& d) {
  std::map<uint64_t, SequenceInfo> out;
  for (const ChunkInfo& c : d.chunk_infos()) {
    std::vector<SequenceInfo> infos;
    d.sequence_infos_for_chunk(c.id, infos);
    for (const SequenceInfo& s : infos) out.emplace(s.key.sequence, s);
  }
  return out;
}

void expect_lookups_match_the_listing(const Deserializer& d, uint64_t largest_key) {
  const std::map<uint64_t, SequenceInfo> expected = listed(d);
  for (uint64_t key = 0; key <= largest_key + 1; ++key) {
    const std::optional<SequenceInfo> found = d.sequence_info_by_key(SequenceKey{key, 0});
    const auto it = expected.find(key);
    ASSERT_EQ(found.has_value(), it != expected.end()) << key;
    if (!found) continue;
    EXPECT_EQ(found->chunk_id, it->second.chunk_id) << key;
    EXPECT_EQ(found->index_in_chunk, it->second.index_in_chunk) << key;
    EXPECT_EQ(found->number_of_samples, it->second.number_of_samples) << key;
  }
}

}  // namespace

TEST(CtfKeyLookup, AscendingAndUnorderedKeysFromAnIndexOrACache) {
  TempDir dir;
  std::string ascending, unordered;
  for (int k = 0; k < 400; k += 2) {
    for (int row = 0; row <= k % 3; ++row)
      ascending += std::to_string(k) + " |x " + std::to_string(row) + "\n";
    unordered += std::to_string((k * 37) % 401) + " |x 1\n";
  }
  for (const auto& [name, text] : {std::pair{"a.ctf", ascending}, std::pair{"u.ctf", unordered}}) {
    const std::string file = dir.write(name, text);
    for (bool cache : {false, true, true}) {  // built, built and cached, read from the cache
      auto d = make_ctf_deserializer(options_for(file, cache));
      expect_lookups_match_the_listing(*d, 401);
      SkipReport report;
      d->add_skips(report);
      EXPECT_TRUE(report.empty()) << name;
    }
  }
}

TEST(CtfKeyLookup, AKeyHeldTwiceResolvesToItsFirstRecordAndTheOtherIsReported) {
  TempDir dir;
  const std::string file = dir.write("d.ctf", "5 |x 1\n3 |x 2\n5 |x 3\n5 |x 4\n3 |x 5\n1 |x 6\n");
  for (bool cache : {false, true, true}) {
    std::vector<std::string> warnings;
    CtfOptions o = options_for(file, cache);
    o.trace_level = 1;
    o.log_sink = [&](int, std::string_view line) { warnings.emplace_back(line); };
    auto d = make_ctf_deserializer(o);
    // "5 |x 3" and "5 |x 4" are one sequence (adjacent rows of one id).
    ASSERT_EQ(d->sequence_info_by_key(SequenceKey{5, 0})->number_of_samples, 1u);
    EXPECT_EQ(d->sequence_info_by_key(SequenceKey{3, 0})->index_in_chunk +
                  300 * d->sequence_info_by_key(SequenceKey{3, 0})->chunk_id,
              1u);
    SkipReport report;
    d->add_skips(report);
    EXPECT_EQ(report.sequences_skipped, 2u);
    ASSERT_EQ(report.first_locations.size(), 2u);
    EXPECT_EQ(report.first_locations[0], file + ":3:1 (sequence 5: its key repeats " + file +
                                             ":1:1; a composite reader joins on the first only)");
    EXPECT_EQ(report.first_locations[1], file + ":5:1 (sequence 3: its key repeats " + file +
                                             ":2:1; a composite reader joins on the first only)");
    ASSERT_EQ(warnings.size(), 2u);
    EXPECT_NE(
        warnings[0].find("reads the sequence at " + file + ":1:1 and never the one at " + file + ":3:1"),
        std::string::npos)
        << warnings[0];
  }
}
