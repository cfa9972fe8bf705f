// Distribution across workers (§5), NoRandomizer specifics (§3.7) and invalid sequences (§3.9).
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "cntkio/errors.hpp"
#include "pipeline/block_randomizer.hpp"
#include "pipeline/no_randomizer.hpp"
#include "pipeline/randomizer_mock.hpp"
#include "pipeline/sequence_cleaner.hpp"

namespace cntkio::pipeline {
namespace {

using testing::all_keys;
using testing::epoch_config;
using testing::MockDeserializer;
using testing::read_epoch;

struct Layout {
  size_t chunks;
  size_t per_chunk;
  bool jagged;
  size_t window;
  bool sample_based;
};

std::shared_ptr<MockDeserializer> make_mock(const Layout& l) {
  return l.jagged ? MockDeserializer::jagged(l.chunks, l.per_chunk)
                  : MockDeserializer::uniform(l.chunks, l.per_chunk);
}

const Layout kLayouts[] = {
    {7, 3, false, 2, false},
    {7, 3, false, 4, true},
    {7, 3, true, 10, true},
    {12, 4, true, 3, false},
    {5, 2, false, std::numeric_limits<size_t>::max(), true},
    {3, 5, false, 1, false},
    {9, 2, true, 0, false},
    {4, 6, true, 1000, false},
};

// Worker r must get exactly the sequences of the global order whose source chunk position is r mod W.
TEST(BlockRandomizerDistributed, EveryWorkerGetsItsChunksAndTogetherEverythingOnce) {
  for (const Layout& l : kLayouts) {
    for (uint64_t seed : {0, 7}) {
      auto mock = make_mock(l);
      BlockRandomizer single(mock, l.window, l.sample_based, seed);
      single.start_epoch(epoch_config());
      const std::vector<uint64_t> global = all_keys(read_epoch(single, *mock, 1, 1));
      ASSERT_EQ(global.size(), l.chunks * l.per_chunk);
      ChunkRandomizer order(mock->chunk_infos(), l.window, l.sample_based);
      order.randomize(seed);
      std::vector<size_t> position(l.chunks);
      for (size_t p = 0; p < l.chunks; ++p) position[order.chunks()[p].chunk_id] = p;

      for (size_t workers = 1; workers <= 5; ++workers) {
        for (bool local_timeline : {false, true}) {
          std::vector<uint64_t> all;
          for (size_t rank = 0; rank < workers; ++rank) {
            SCOPED_TRACE(::testing::Message() << "layout " << l.chunks << "x" << l.per_chunk << " window "
                                              << l.window << " seed " << seed << " W " << workers << " r "
                                              << rank << " local timeline " << local_timeline);
            std::vector<uint64_t> expected;
            for (uint64_t k : global) {
              if (position[k / l.per_chunk] % workers == rank) expected.push_back(k);
            }
            for (size_t mb : {1, 4}) {
              BlockRandomizer r(mock, l.window, l.sample_based, seed);
              r.start_epoch(epoch_config(kRequestDataSize, kInfinitelyRepeat, 0, false, workers, rank));
              const size_t global_budget = local_timeline ? std::numeric_limits<size_t>::max() : mb;
              std::vector<uint64_t> keys = all_keys(read_epoch(r, *mock, global_budget, mb));
              EXPECT_EQ(keys, expected);
              if (rank >= l.chunks) {
                EXPECT_TRUE(keys.empty());
              }
              if (mb == 1) all.insert(all.end(), keys.begin(), keys.end());
            }
          }
          std::sort(all.begin(), all.end());
          std::vector<uint64_t> every(l.chunks * l.per_chunk);
          std::iota(every.begin(), every.end(), 0);
          EXPECT_EQ(all, every);
        }
      }
    }
  }
}

TEST(BlockRandomizerDistributed, WorkerBeyondTheChunkCountGetsNothing) {
  // CNTKTextFormatReaderNoFirstMinibatchData: one chunk, two workers.
  auto mock = MockDeserializer::uniform(1, 3);
  BlockRandomizer r(mock, 128, false, 0);
  r.start_epoch(epoch_config(kRequestDataSize, kInfinitelyRepeat, 0, false, 2, 1));
  Sequences s = r.get_next_sequences(10, 10);
  EXPECT_EQ(s.num_sequences(), 0u);
  EXPECT_TRUE(s.end_of_epoch);
  EXPECT_EQ(mock->counters().loads, 0u);
  BlockRandomizer first(mock, 128, false, 0);
  first.start_epoch(epoch_config(kRequestDataSize, kInfinitelyRepeat, 0, false, 2, 0));
  EXPECT_EQ(all_keys(read_epoch(first, *mock, 10, 10)).size(), 3u);
}

TEST(BlockRandomizerDistributed, EpochsOfSeveralSweepsSplitExactly) {
  auto mock = MockDeserializer::jagged(8, 3);
  for (size_t workers = 2; workers <= 4; ++workers) {
    std::map<uint64_t, int> seen;
    for (size_t rank = 0; rank < workers; ++rank) {
      BlockRandomizer r(mock, 5, true, 3);
      r.start_epoch(epoch_config(kRequestDataSize, 3, 0, true, workers, rank));
      for (uint64_t k : all_keys(read_epoch(r, *mock, std::numeric_limits<size_t>::max(), 3))) ++seen[k];
    }
    ASSERT_EQ(seen.size(), 24u);
    for (const auto& [key, count] : seen) EXPECT_EQ(count, 3) << key;
  }
}

TEST(NoRandomizer, OriginalOrderWithEndOfEpochOnTheLast) {
  auto mock = MockDeserializer::uniform(5, 2);
  NoRandomizer r(mock);
  r.start_epoch(epoch_config());
  auto batches = read_epoch(r, *mock, 1, 1);
  ASSERT_EQ(batches.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(batches[i].keys, std::vector<uint64_t>{i});
    EXPECT_EQ(batches[i].end_of_epoch, i == 9);
    EXPECT_EQ(batches[i].end_of_sweep, i == 9);
  }
}

TEST(NoRandomizer, ChunkIdsAndDataFollowTheChunks) {
  auto mock = MockDeserializer::uniform(3, 2);
  NoRandomizer r(mock);
  r.start_epoch(epoch_config());
  Sequences s = r.get_next_sequences(6, 6);
  EXPECT_EQ(s.chunk_ids, (std::vector<uint32_t>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(s.chunks.size(), 3u);
  EXPECT_TRUE(s.end_of_epoch);
}

TEST(NoRandomizer, WorkersTakeEveryWthSequence) {
  for (bool jagged : {false, true}) {
    auto mock = jagged ? MockDeserializer::jagged(7, 3) : MockDeserializer::uniform(7, 3);
    for (size_t workers = 1; workers <= 5; ++workers) {
      std::vector<uint64_t> all;
      for (size_t rank = 0; rank < workers; ++rank) {
        for (size_t mb : {1, 4}) {
          for (bool local_timeline : {false, true}) {
            NoRandomizer r(mock);
            r.start_epoch(epoch_config(kRequestDataSize, kInfinitelyRepeat, 0, false, workers, rank));
            const size_t global_budget = local_timeline ? std::numeric_limits<size_t>::max() : mb;
            std::vector<uint64_t> keys = all_keys(read_epoch(r, *mock, global_budget, mb));
            std::vector<uint64_t> expected;
            for (uint64_t k = rank; k < 21; k += workers) expected.push_back(k);
            EXPECT_EQ(keys, expected) << workers << " " << rank << " " << mb;
            if (mb == 1 && !local_timeline) all.insert(all.end(), keys.begin(), keys.end());
          }
        }
      }
      std::sort(all.begin(), all.end());
      std::vector<uint64_t> every(21);
      std::iota(every.begin(), every.end(), 0);
      EXPECT_EQ(all, every);
    }
  }
}

TEST(NoRandomizer, DecimationCounterRunsOnAcrossASweepWrap) {
  // 5 sequences per sweep, 2 workers: in the second sweep of an epoch worker 0 continues with counter 5..
  auto mock = MockDeserializer::uniform(5, 1);
  NoRandomizer zero(mock);
  zero.start_epoch(epoch_config(kRequestDataSize, 2, 0, false, 2, 0));
  EXPECT_EQ(all_keys(read_epoch(zero, *mock, 1, 1)), (std::vector<uint64_t>{0, 2, 4, 1, 3}));
  NoRandomizer one(mock);
  one.start_epoch(epoch_config(kRequestDataSize, 2, 0, false, 2, 1));
  EXPECT_EQ(all_keys(read_epoch(one, *mock, 1, 1)), (std::vector<uint64_t>{1, 3, 0, 2, 4}));
  // An epoch starting at the second sweep resets the counter from the position (CNTK's quirk).
  NoRandomizer restarted(mock);
  restarted.start_epoch(epoch_config(5, kInfinitelyRepeat, 1, false, 2, 0));
  EXPECT_EQ(all_keys(read_epoch(restarted, *mock, 1, 1)), (std::vector<uint64_t>{0, 2, 4}));
}

TEST(NoRandomizer, GlobalBudgetCanLeaveAWorkerEmpty) {
  // Worker 1 of 2 with a global budget of 1: every other call passes over worker 0's sequence only.
  auto mock = MockDeserializer::uniform(2, 2);
  NoRandomizer r(mock);
  r.start_epoch(epoch_config(kRequestDataSize, kInfinitelyRepeat, 0, false, 2, 1));
  Sequences s = r.get_next_sequences(1, 1);
  EXPECT_EQ(s.num_sequences(), 0u);
  EXPECT_FALSE(s.end_of_epoch);
  EXPECT_EQ(r.current_sample_position(), 1u);
  s = r.get_next_sequences(1, 1);
  ASSERT_EQ(s.num_sequences(), 1u);
  EXPECT_EQ(s.keys[0].sequence, 1u);
}

TEST(NoRandomizer, SetPositionMovesToTheNextSequenceStart) {
  auto mock = std::make_shared<MockDeserializer>(std::vector<std::vector<uint32_t>>{{3, 2}, {4}, {1, 5}});
  NoRandomizer r(mock);  // starts 0 3 | 5 | 9 10, S = 15
  r.start_epoch(epoch_config(kRequestDataSize, 2));
  const std::vector<std::pair<size_t, size_t>> cases = {{0, 0},   {1, 3},   {3, 3},   {4, 5},   {5, 5},
                                                        {6, 9},   {9, 9},   {10, 10}, {11, 15}, {14, 15},
                                                        {15, 15}, {16, 18}, {29, 30}};
  for (auto [p, expected] : cases) {
    r.set_current_sample_position(p);
    EXPECT_EQ(r.current_sample_position(), expected) << p;
  }
  r.set_current_sample_position(6);
  EXPECT_EQ(all_keys(read_epoch(r, *mock, 100, 100)), (std::vector<uint64_t>{3, 4, 0, 1, 2, 3, 4}));
}

TEST(RandomizerSequenceCleaner, DropsInvalidSequencesKeepingOrder) {
  std::vector<float> values(4);
  Sequences s;
  s.data.resize(2);
  for (uint64_t k = 0; k < 4; ++k) {
    SequenceData d;
    d.values = &values[k];
    d.number_of_samples = 1;
    s.data[0].push_back(d);
    d.valid = k != 1;
    s.data[1].push_back(d);
    s.keys.push_back({k, 0});
    s.chunk_ids.push_back(static_cast<uint32_t>(k));
  }
  s.data[0][3].valid = false;
  SequenceCleaner cleaner(2);
  cleaner.clean(s, *MockDeserializer::uniform(1, 1));
  EXPECT_EQ(cleaner.removed(), 2u);
  EXPECT_EQ(cleaner.first_removed_keys(), (std::vector<std::string>{"1", "3"}));
  ASSERT_EQ(s.num_sequences(), 2u);
  EXPECT_EQ(s.keys[0].sequence, 0u);
  EXPECT_EQ(s.keys[1].sequence, 2u);
  EXPECT_EQ(s.chunk_ids, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(s.data[0][1].values, &values[2]);
  EXPECT_EQ(s.data[1].size(), 2u);
}

Sequences one_invalid() {
  Sequences s;
  s.data.resize(1);
  SequenceData d;
  d.valid = false;
  s.data[0].push_back(d);
  s.keys.push_back({});
  s.chunk_ids.push_back(0);
  return s;
}

// CNTK checks the budget only for a batch that keeps data, so invalid sequences at the end of a sweep (or
// in a file whose sequences are all invalid) vanish with a warning; cntkio throws as soon as it is exceeded.
TEST(RandomizerSequenceCleaner, ThrowsOnceTheMaximumIsExceededEvenWhenNothingRemains) {
  SequenceCleaner cleaner(1);
  const auto names = MockDeserializer::uniform(1, 1);
  Sequences first = one_invalid();
  first.keys[0].sequence = 5;
  cleaner.clean(first, *names);  // within the budget of 1
  EXPECT_EQ(first.num_sequences(), 0u);
  Sequences second = one_invalid();
  second.keys[0].sequence = 7;
  try {
    cleaner.clean(second, *names);
    FAIL() << "expected an error";
  } catch (const FormatError& e) {  // malformed data: the CLI's exit status 4
    EXPECT_EQ(e.cntk_text(),
              "Number of invalid sequences '2' in the input exceeded the specified maximum number '1'");
    EXPECT_EQ(e.location().sequence_key, "7");  // the last one removed
  }
  EXPECT_EQ(cleaner.removed(), 2u);
}

TEST(RandomizerInvalidSequences, DroppedAndCountedByBothRandomizers) {
  for (bool block : {false, true}) {
    auto mock = MockDeserializer::uniform(5, 4);
    mock->set_invalid(3);
    mock->set_invalid(17);
    std::unique_ptr<SequenceEnumerator> r;
    if (block) {
      auto b = std::make_unique<BlockRandomizer>(mock, 8, true, 0, 2);
      b->start_epoch(epoch_config());
      std::vector<uint64_t> keys = all_keys(read_epoch(*b, *mock, 3, 3));
      EXPECT_EQ(b->invalid_sequences_removed(), 2u);
      std::vector<std::string> invalid = b->invalid_sequence_keys();
      std::sort(invalid.begin(), invalid.end());
      EXPECT_EQ(invalid, (std::vector<std::string>{"17", "3"}));
      std::sort(keys.begin(), keys.end());
      std::vector<uint64_t> expected;
      for (uint64_t k = 0; k < 20; ++k) {
        if (k != 3 && k != 17) expected.push_back(k);
      }
      EXPECT_EQ(keys, expected);
    } else {
      NoRandomizer n(mock, 2);
      n.start_epoch(epoch_config());
      std::vector<uint64_t> keys = all_keys(read_epoch(n, *mock, 3, 3));
      EXPECT_EQ(n.invalid_sequences_removed(), 2u);
      EXPECT_EQ(n.invalid_sequence_keys(), (std::vector<std::string>{"3", "17"}));
      EXPECT_EQ(keys, (std::vector<uint64_t>{0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19}));
    }
  }
}

TEST(RandomizerInvalidSequences, TooManyInvalidSequencesThrow) {
  for (bool block : {false, true}) {
    auto mock = MockDeserializer::uniform(5, 4);
    mock->set_invalid(3);
    mock->set_invalid(17);
    std::unique_ptr<SequenceEnumerator> r;
    if (block) {
      r = std::make_unique<BlockRandomizer>(mock, 8, true, 0, 1);
    } else {
      r = std::make_unique<NoRandomizer>(mock, 1);
    }
    r->start_epoch(epoch_config());
    EXPECT_THROW(read_epoch(*r, *mock, 3, 3), Error);
  }
}

// Describes chunk 1 with more samples than its sequences hold (a lying CBF chunk table, a buggy user
// deserializer): a sweep would wait forever for samples that never come.
class OverstatedChunk : public MockDeserializer {
 public:
  OverstatedChunk() : MockDeserializer(std::vector<std::vector<uint32_t>>(3, std::vector<uint32_t>(4, 2))) {}
  std::vector<ChunkInfo> chunk_infos() const override {
    std::vector<ChunkInfo> infos = MockDeserializer::chunk_infos();
    infos[1].number_of_samples += 100;
    return infos;
  }
};

TEST(RandomizerChunkListing, SamplesThatDisagreeWithTheChunkDescriptionAreAnErrorNotAnEndlessSweep) {
  for (bool block : {false, true}) {
    auto lying = std::make_shared<OverstatedChunk>();
    std::unique_ptr<SequenceEnumerator> r;
    if (block) {
      r = std::make_unique<BlockRandomizer>(lying, 8, true, 0, 0);
    } else {
      r = std::make_unique<NoRandomizer>(lying, 0);
    }
    r->start_epoch(epoch_config());
    try {
      read_epoch(*r, *lying, 4, 4);
      FAIL() << (block ? "block" : "none") << ": expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(
                    "Chunk 1 lists sequences of 8 samples but its chunk description says 108"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace cntkio::pipeline
