// SequenceList: the CTF index's compact records give back exactly what was appended, in any access pattern.
#include "formats/ctf/sequence_list.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

using cntkio::ctf::IndexedSequence;
using cntkio::ctf::SequenceList;

namespace {

bool same(const IndexedSequence& a, const IndexedSequence& b) {
  return a.key == b.key && a.offset == b.offset && a.samples == b.samples && a.size == b.size;
}

// Contiguous sequences with gaps now and then; keys ascending (ids) or in any order, with extreme values.
std::vector<IndexedSequence> records(size_t n, bool ascending, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<IndexedSequence> out;
  uint64_t offset = 0;
  uint64_t key = 0;
  for (size_t i = 0; i < n; ++i) {
    IndexedSequence s;
    if (ascending) {
      key += rng() % 3;  // repeats included
      s.key = key;
    } else {
      s.key = rng() % 4 == 0 ? std::numeric_limits<uint64_t>::max() - rng() % 5 : rng() % 1000;
    }
    offset += rng() % 10 == 0 ? rng() % 100000 : 0;
    s.offset = offset;
    s.size = rng() % 50 == 0 ? std::numeric_limits<uint32_t>::max() : 1 + static_cast<uint32_t>(rng() % 500);
    s.samples = rng() % 50 == 0 ? std::numeric_limits<uint32_t>::max() : 1 + static_cast<uint32_t>(rng() % 9);
    offset += s.size;
    out.push_back(s);
  }
  return out;
}

}  // namespace

TEST(SequenceList, GivesBackEveryRecordByIndexRangeAndInOrder) {
  for (bool ascending : {true, false}) {
    const std::vector<IndexedSequence> expected = records(20000, ascending, ascending ? 1 : 2);
    SequenceList list;
    for (const IndexedSequence& s : expected) list.append(s);
    ASSERT_EQ(list.size(), expected.size());
    EXPECT_EQ(list.keys_ascending(), ascending);
    size_t i = 0;
    list.for_each([&](const IndexedSequence& s) { EXPECT_TRUE(same(s, expected[i++])); });
    std::mt19937_64 rng(3);
    for (int probe = 0; probe < 2000; ++probe) {
      const uint64_t at = rng() % expected.size();
      ASSERT_TRUE(same(list.at(at), expected[at])) << at;
      const uint64_t count = std::min<uint64_t>(rng() % 300, expected.size() - at);
      std::vector<IndexedSequence> range;
      list.decode(at, count, range);
      ASSERT_EQ(range.size(), count);
      for (uint64_t k = 0; k < count; ++k) ASSERT_TRUE(same(range[k], expected[at + k]));
    }
  }
}

TEST(SequenceList, IsSmallForTypicalFiles) {
  // One-row sequences of about 200 bytes with consecutive ids: a few bytes each, far below 24.
  SequenceList list;
  uint64_t offset = 0;
  for (uint64_t k = 0; k < 1000000; ++k) {
    list.append(IndexedSequence{k, offset, 1, 200});
    offset += 200;
  }
  EXPECT_LT(static_cast<double>(list.memory_bytes()) / 1e6, 8.0);
}

TEST(SequenceList, LowerBoundFindsTheFirstRecordOfAKey) {
  const std::vector<IndexedSequence> expected = records(5000, true, 4);
  SequenceList list;
  for (const IndexedSequence& s : expected) list.append(s);
  uint64_t repeats = 0;
  for (size_t i = 1; i < expected.size(); ++i) repeats += expected[i].key == expected[i - 1].key;
  EXPECT_EQ(list.adjacent_equal_keys(), repeats);
  for (uint64_t key = 0; key <= expected.back().key + 1; ++key) {
    const auto it = std::lower_bound(expected.begin(), expected.end(), key,
                                     [](const IndexedSequence& s, uint64_t k) { return s.key < k; });
    ASSERT_EQ(list.lower_bound(key), static_cast<uint64_t>(it - expected.begin())) << key;
  }
}

TEST(SequenceList, TakeAppendsAnotherListWithShiftedKeysAndEmptiesIt) {
  const std::vector<IndexedSequence> first = records(3000, true, 5);
  std::vector<IndexedSequence> second = records(7000, true, 6);
  const uint64_t second_start = first.back().offset + first.back().size;
  for (IndexedSequence& s : second) s.offset += second_start;
  SequenceList a, b;
  for (const IndexedSequence& s : first) a.append(s);
  for (const IndexedSequence& s : second) b.append(s);
  a.take(b, 1000);
  EXPECT_TRUE(b.empty());
  ASSERT_EQ(a.size(), first.size() + second.size());
  for (size_t i = 0; i < second.size(); ++i) {
    IndexedSequence s = second[i];
    s.key += 1000;
    ASSERT_TRUE(same(a.at(first.size() + i), s)) << i;
  }
}
