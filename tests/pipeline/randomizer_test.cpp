// CNTK's random primitives, chunk randomization and the delivered orders of ReaderLibTests.cpp (§3.2-3.6).
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "cntkio/errors.hpp"
#include "core/thread_pool.hpp"
#include "pipeline/block_randomizer.hpp"
#include "pipeline/chunk_randomizer.hpp"
#include "pipeline/random.hpp"
#include "pipeline/randomizer_mock.hpp"

namespace cntkio::pipeline {
namespace {

using testing::all_keys;
using testing::epoch_config;
using testing::MockDeserializer;
using testing::read_epoch;

std::vector<int> iota_vector(int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::vector<int> shuffled_all(int n, uint64_t seed) {
  std::vector<int> v = iota_vector(n);
  RandomEngine engine;
  reseed(engine, seed);
  shuffle_all(v, engine);
  return v;
}

TEST(RandomPrimitives, EngineReferenceOutputsForSeeds0And1) {
  RandomEngine engine;
  reseed(engine, 0);
  EXPECT_EQ(engine(), 2947667278772165694ULL);
  EXPECT_EQ(engine(), 18301848765998365067ULL);
  EXPECT_EQ(engine(), 729919693006235833ULL);
  reseed(engine, 1);
  EXPECT_EQ(engine(), 2469588189546311528ULL);
  EXPECT_EQ(engine(), 2516265689700432462ULL);
  EXPECT_EQ(engine(), 8323445853463659930ULL);
}

TEST(RandomPrimitives, RandMtIsBeginPlusBiasedModulo) {
  RandomEngine engine;
  reseed(engine, 0);
  EXPECT_EQ(rand_mt(engine, 3, 10), 3 + 2947667278772165694ULL % 7);
  EXPECT_EQ(rand_mt(engine, 0, 1000), 18301848765998365067ULL % 1000);
}

TEST(RandomPrimitives, ShuffleAllMatchesCntkExamples) {
  EXPECT_EQ(shuffled_all(5, 0), (std::vector<int>{4, 0, 3, 1, 2}));
  EXPECT_EQ(shuffled_all(5, 1), (std::vector<int>{1, 0, 3, 2, 4}));
  EXPECT_EQ(shuffled_all(5, 2), (std::vector<int>{1, 4, 2, 0, 3}));
  EXPECT_EQ(shuffled_all(10, 0), (std::vector<int>{4, 7, 3, 9, 1, 2, 8, 6, 5, 0}));
}

TEST(RandomPrimitives, ShuffleRangeIsForwardFisherYates) {
  // Seed 0 draws 2947667278772165694 (% 3 = 0), then 18301848765998365067 (% 2 = 1), then any (% 1 = 0).
  std::vector<int> v = iota_vector(5);
  RandomEngine engine;
  reseed(engine, 0);
  shuffle_range(v, 2, 5, engine);
  EXPECT_EQ(v, (std::vector<int>{0, 1, 2, 4, 3}));
  // An empty range draws nothing.
  reseed(engine, 0);
  shuffle_range(v, 3, 3, engine);
  EXPECT_EQ(engine(), 2947667278772165694ULL);
}

std::vector<ChunkInfo> uniform_chunks(size_t n, size_t per_chunk) {
  std::vector<ChunkInfo> chunks(n);
  for (size_t i = 0; i < n; ++i) chunks[i] = {static_cast<uint32_t>(i), per_chunk, per_chunk};
  return chunks;
}

std::vector<uint32_t> chunk_order(const ChunkRandomizer& r) {
  std::vector<uint32_t> order;
  for (const RandomizedChunk& c : r.chunks()) order.push_back(c.chunk_id);
  return order;
}

std::vector<std::pair<size_t, size_t>> windows(const ChunkRandomizer& r) {
  std::vector<std::pair<size_t, size_t>> w;
  for (const RandomizedChunk& c : r.chunks()) w.emplace_back(c.window_begin, c.window_end);
  return w;
}

TEST(ChunkRandomizer, TenByThreeWindowOfThreeChunks) {
  ChunkRandomizer r(uniform_chunks(10, 3), 3, false);
  r.randomize(0);
  EXPECT_EQ(chunk_order(r), (std::vector<uint32_t>{4, 7, 3, 9, 1, 2, 8, 6, 5, 0}));
  EXPECT_EQ(windows(r),
            (std::vector<std::pair<size_t, size_t>>{
                {0, 3}, {0, 3}, {1, 4}, {2, 5}, {3, 6}, {4, 7}, {5, 8}, {6, 9}, {7, 10}, {7, 10}}));
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(r.chunks()[i].sample_start, 3 * i);
    EXPECT_EQ(r.chunks()[i].sequence_start, 3 * i);
  }
}

TEST(ChunkRandomizer, FiveByTwoWindowOfFourSamples) {
  ChunkRandomizer r(uniform_chunks(5, 2), 4, true);
  r.randomize(0);
  EXPECT_EQ(chunk_order(r), (std::vector<uint32_t>{4, 0, 3, 1, 2}));
  EXPECT_EQ(windows(r), (std::vector<std::pair<size_t, size_t>>{{0, 1}, {0, 2}, {1, 3}, {2, 4}, {3, 5}}));
}

TEST(ChunkRandomizer, HugeWindowsCoverEverything) {
  ChunkRandomizer samples(uniform_chunks(7, 2), std::numeric_limits<size_t>::max(), true);
  samples.randomize(3);
  ChunkRandomizer chunks(uniform_chunks(7, 2), kRequestDataSize, false);
  chunks.randomize(3);
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(samples.chunks()[i].window_begin, 0u);
    EXPECT_EQ(samples.chunks()[i].window_end, 7u);
    EXPECT_EQ(chunks.chunks()[i].window_begin, 0u);
    EXPECT_EQ(chunks.chunks()[i].window_end, 7u);
  }
}

TEST(ChunkRandomizer, ZeroWindowKeepsEachChunkAlone) {
  for (bool sample_based : {false, true}) {
    ChunkRandomizer r(uniform_chunks(6, 4), 0, sample_based);
    r.randomize(0);
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(r.chunks()[i].window_begin, i);
      EXPECT_EQ(r.chunks()[i].window_end, i + 1);
    }
  }
}

TEST(ChunkRandomizer, PrefixSumsFollowTheRandomizedOrder) {
  std::vector<ChunkInfo> chunks = {{0, 5, 2}, {1, 1, 1}, {2, 7, 3}, {3, 2, 2}, {4, 4, 1}};
  ChunkRandomizer r(chunks, 4, true);
  r.randomize(0);  // order 4 0 3 1 2
  EXPECT_EQ(chunk_order(r), (std::vector<uint32_t>{4, 0, 3, 1, 2}));
  std::vector<size_t> sample_starts, sequence_starts;
  for (const RandomizedChunk& c : r.chunks()) {
    sample_starts.push_back(c.sample_start);
    sequence_starts.push_back(c.sequence_start);
  }
  EXPECT_EQ(sample_starts, (std::vector<size_t>{0, 4, 9, 11, 12}));
  EXPECT_EQ(sequence_starts, (std::vector<size_t>{0, 1, 3, 5, 6}));
  EXPECT_EQ(r.total_samples(), 19u);
  EXPECT_EQ(r.total_sequences(), 9u);
}

struct VectorCase {
  size_t chunks;
  size_t per_chunk;
  size_t window;
  bool sample_based;
  uint64_t seed;
  size_t sweeps;
  std::vector<uint64_t> expected;
};

// Reads the case through get_next_sequences with several minibatch sizes, with and without sweep
// crossing; the order must not depend on either.
void check_vector(const VectorCase& c) {
  for (size_t mb : {1, 3, 7}) {
    for (bool cross : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "mb " << mb << " cross " << cross);
      auto mock = MockDeserializer::uniform(c.chunks, c.per_chunk);
      BlockRandomizer r(mock, c.window, c.sample_based, c.seed);
      r.start_epoch(epoch_config(kRequestDataSize, c.sweeps, 0, cross));
      EXPECT_EQ(all_keys(read_epoch(r, *mock, mb, mb)), c.expected);
    }
  }
}

const std::vector<uint64_t> kFiveByTwoSweep0 = {6, 3, 1, 5, 9, 0, 4, 2, 7, 8};
const std::vector<uint64_t> kFiveByTwoSweep1 = {3, 0, 8, 4, 7, 5, 2, 9, 1, 6};

TEST(BlockRandomizerVectors, FiveByTwoWholeCorpusWindow) {
  check_vector({5, 2, std::numeric_limits<size_t>::max(), true, 0, 1, kFiveByTwoSweep0});
}

TEST(BlockRandomizerVectors, TwoSweepsUseSeedOffsetPlusSweep) {
  std::vector<uint64_t> both = kFiveByTwoSweep0;
  both.insert(both.end(), kFiveByTwoSweep1.begin(), kFiveByTwoSweep1.end());
  check_vector({5, 2, std::numeric_limits<size_t>::max(), true, 0, 2, both});
}

TEST(BlockRandomizerVectors, SeedOffsetOneStartsWhereSweepOneOfSeedZeroDoes) {
  check_vector({5, 2, std::numeric_limits<size_t>::max(), true, 1, 1, kFiveByTwoSweep1});
}

// With the whole corpus as every chunk's window no draw is rejected: the order is the chunk shuffle, then
// one swap per sequence with a draw over all of them (the randomizer takes a faster path for it). Built
// here from the primitives, for a corpus too large for hand-made vectors.
std::vector<uint64_t> whole_corpus_window_order(size_t chunks, size_t per_chunk, uint64_t seed) {
  std::vector<uint32_t> chunk_order(chunks);
  std::iota(chunk_order.begin(), chunk_order.end(), 0u);
  RandomEngine engine;
  reseed(engine, seed);
  shuffle_all(chunk_order, engine);
  std::vector<uint64_t> expected;
  for (uint32_t c : chunk_order) {
    for (uint64_t k = 0; k < per_chunk; ++k) expected.push_back(c * per_chunk + k);
  }
  reseed(engine, seed);
  for (size_t t = 0; t < expected.size(); ++t) {
    std::swap(expected[t], expected[rand_mt(engine, 0, expected.size())]);
  }
  return expected;
}

TEST(BlockRandomizerVectors, AWholeCorpusWindowIsOneSwapPerSequenceOverAllOfThem) {
  for (const size_t threads : {0u, 1u, 3u}) {  // the pool's idle threads list, draw and move beside this one
    for (const uint64_t seed : {0u, 3u}) {
      auto mock = MockDeserializer::jagged(37, 29);
      auto pool = threads > 0 ? std::make_shared<core::ThreadPool>(threads) : nullptr;
      BlockRandomizer r(mock, std::numeric_limits<size_t>::max(), false, seed, 0, pool);
      r.start_epoch(epoch_config(kRequestDataSize, 1, 0, false));
      EXPECT_EQ(all_keys(read_epoch(r, *mock, 5, 5)), whole_corpus_window_order(37, 29, seed))
          << "seed " << seed << ", " << threads << " threads";
    }
  }
}

// A mock whose listing of one chunk fails the first time (a remote read that times out, say).
class ListingFailsOnce : public MockDeserializer {
 public:
  ListingFailsOnce(size_t chunks, size_t per_chunk, uint32_t failing)
      : MockDeserializer(std::vector<std::vector<uint32_t>>(chunks, std::vector<uint32_t>(per_chunk, 1))),
        failing_(failing) {}
  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    if (chunk_id == failing_ && !failed_.exchange(true)) throw IoError("listing failed", "mock", EIO);
    MockDeserializer::sequence_infos_for_chunk(chunk_id, out);
  }

 private:
  uint32_t failing_;
  mutable std::atomic<bool> failed_{false};
};

// The whole-corpus window draws its permutation while the chunks are listed: a listing that fails must not
// use up the draws, so reading on after the error gives the order an unfailed reader gives.
TEST(BlockRandomizerVectors, AListingThatFailsLeavesTheWholeCorpusOrderForTheRetry) {
  for (const size_t threads : {0u, 2u}) {
    auto mock = std::make_shared<ListingFailsOnce>(23, 17, 11);
    auto pool = threads > 0 ? std::make_shared<core::ThreadPool>(threads) : nullptr;
    BlockRandomizer r(mock, std::numeric_limits<size_t>::max(), false, 5, 0, pool);
    r.start_epoch(epoch_config(kRequestDataSize, 1, 0, false));
    EXPECT_THROW(r.get_next_sequences(4, 4), IoError);
    EXPECT_EQ(all_keys(read_epoch(r, *mock, 4, 4)), whole_corpus_window_order(23, 17, 5))
        << threads << " threads";
  }
}

// A minibatch's sequences lie in several chunks, each looked up once per minibatch: a chunk whose load fails
// part-way through those lookups leaves nothing behind, and the minibatch read again from the same position
// (as the reader does after an error) has the data of the reader that never failed. Minibatches cross the
// sweep's end, where the same positions hold other chunks, and the failing load is each of the second
// sweep's first loads in turn.
TEST(BlockRandomizerVectors, AMinibatchWhoseChunkFailsToLoadIsReadAgainWithTheSameData) {
  auto intact = MockDeserializer::uniform(9, 7);
  BlockRandomizer reference(intact, 4, false, 3, 0, nullptr);
  reference.start_epoch(epoch_config(kRequestDataSize, 3, 0, true));
  const std::vector<testing::Batch> expected = read_epoch(reference, *intact, 13, 13);
  for (size_t failing_load = 10; failing_load < 18; ++failing_load) {
    auto failing = std::make_shared<testing::FileMock>(9, 7, "");
    size_t loads = 0;
    failing->on_load = [&](uint32_t) {
      if (++loads == failing_load) throw IoError("read failed", "mock", EIO);
    };
    BlockRandomizer r(failing, 4, false, 3, 0, nullptr);
    r.start_epoch(epoch_config(kRequestDataSize, 3, 0, true));
    std::vector<testing::Batch> got;
    size_t failures = 0;
    while ((got.empty() || !got.back().end_of_epoch) && got.size() <= expected.size()) {
      const size_t position = r.current_sample_position();
      try {
        got.push_back(testing::to_batch(r.get_next_sequences(13, 13), *failing));
      } catch (const IoError&) {
        ++failures;
        r.set_current_sample_position(position);
      }
    }
    EXPECT_EQ(failures, 1u) << "load " << failing_load;
    EXPECT_EQ(all_keys(got), all_keys(expected)) << "load " << failing_load;
  }
}

TEST(BlockRandomizerVectors, FiveByTwoWindowOfFourSamples) {
  check_vector({5, 2, 4, true, 0, 1, {8, 9, 1, 0, 6, 7, 2, 3, 4, 5}});
}

TEST(BlockRandomizerVectors, TenByTwoWindowOfEighteenSamples) {
  check_vector(
      {10, 2, 18, true, 0, 1, {18, 19, 7, 14, 6, 9, 8, 15, 5, 2, 10, 13, 16, 17, 1, 4, 3, 12, 11, 0}});
}

TEST(BlockRandomizerVectors, TenByThreeWindowOfThreeChunks) {
  check_vector({10, 3, 3, false, 0, 1, {21, 13, 22, 12, 14, 9,  27, 23, 10, 11, 3,  5,  28, 29, 4,
                                        26, 7,  24, 8,  6,  25, 19, 18, 15, 0,  16, 20, 2,  17, 1}});
}

TEST(BlockRandomizerVectors, WindowOfZeroShufflesOnlyWithinChunks) {
  // Chunk order for seed 0 over 5 chunks is 4 0 3 1 2; each chunk's sequences stay in their own slots.
  auto mock = MockDeserializer::uniform(5, 3);
  BlockRandomizer r(mock, 0, false, 0);
  r.start_epoch(epoch_config());
  std::vector<uint64_t> keys = all_keys(read_epoch(r, *mock, 4, 4));
  ASSERT_EQ(keys.size(), 15u);
  const uint64_t order[] = {4, 0, 3, 1, 2};
  for (size_t p = 0; p < 5; ++p) {
    std::vector<uint64_t> slot(keys.begin() + 3 * p, keys.begin() + 3 * p + 3);
    std::sort(slot.begin(), slot.end());
    EXPECT_EQ(slot, (std::vector<uint64_t>{3 * order[p], 3 * order[p] + 1, 3 * order[p] + 2}));
  }
}

TEST(BlockRandomizerVectors, DifferentSeedOffsetsGiveDifferentOrders) {
  auto mock = MockDeserializer::uniform(20, 5);
  std::vector<std::vector<uint64_t>> orders;
  for (uint64_t seed : {0, 1, 7}) {
    BlockRandomizer r(mock, 30, true, seed);
    r.start_epoch(epoch_config());
    orders.push_back(all_keys(read_epoch(r, *mock, 10, 10)));
    std::vector<uint64_t> sorted = orders.back();
    std::sort(sorted.begin(), sorted.end());
    std::vector<uint64_t> expected(100);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(sorted, expected);
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[0], orders[2]);
  EXPECT_NE(orders[1], orders[2]);
}

}  // namespace
}  // namespace cntkio::pipeline
