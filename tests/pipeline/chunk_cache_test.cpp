// The cache of decoded chunks (pipeline/chunk_cache.hpp) over a mock deserializer: what it keeps, what it
// counts, and when it drops everything.
#include "pipeline/chunk_cache.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include "randomizer_mock.hpp"

namespace cntkio::pipeline {
namespace {

using testing::FileMock;
using testing::MockDeserializer;

class ChunkCacheTest : public testing::DataFileTest {};

// 10 one-sample sequences of one float: 40 bytes a chunk.
constexpr uint64_t kChunkBytes = 10 * sizeof(float);

TEST_F(ChunkCacheTest, KeepsTheFirstChunksThatFitAndAnswersLaterLoadsWithThem) {
  auto mock = std::make_shared<FileMock>(4, 10, path_);
  CachingDeserializer cache(mock, 2 * kChunkBytes + kChunkBytes / 2);
  std::vector<ChunkPtr> first;
  for (uint32_t c = 0; c < 4; ++c) first.push_back(cache.load_chunk(c));
  EXPECT_EQ(cache.data_bytes(*first[0], 0), kChunkBytes);
  for (uint32_t c = 0; c < 4; ++c) {
    const ChunkPtr again = cache.load_chunk(c);
    EXPECT_EQ(again == first[c], c < 2) << "chunk " << c;  // kept chunks come back as they were
  }
  EXPECT_EQ(mock->counters().loads, 6u);  // chunks 2 and 3 parsed twice
  const SourceStats::ChunkCache stats = cache.stats();
  EXPECT_EQ(stats.budget_bytes, 2 * kChunkBytes + kChunkBytes / 2);
  EXPECT_EQ(stats.bytes, 2 * kChunkBytes);
  EXPECT_EQ(stats.chunks, 2u);
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.misses, 6u);
  EXPECT_EQ(stats.invalidations, 0u);
}

TEST_F(ChunkCacheTest, KeepsNothingOfADeserializerThatListsNoFiles) {
  auto mock = std::make_shared<FileMock>(2, 10, "");
  CachingDeserializer cache(mock, 1 << 20);
  for (int pass = 0; pass < 3; ++pass) {
    for (uint32_t c = 0; c < 2; ++c) cache.load_chunk(c);
  }
  EXPECT_EQ(mock->counters().loads, 6u);
  EXPECT_EQ(cache.stats().chunks, 0u);
}

TEST_F(ChunkCacheTest, DropsEverythingWhenADataFileChanges) {
  auto mock = std::make_shared<FileMock>(2, 10, path_);
  CachingDeserializer cache(mock, 1 << 20);
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t c = 0; c < 2; ++c) cache.load_chunk(c);
  }
  EXPECT_EQ(mock->counters().loads, 2u);
  std::ofstream(path_) << "other data";  // size and modification time change
  cache.load_chunk(0);                   // a new pass: the files are checked
  EXPECT_EQ(mock->counters().loads, 3u);
  EXPECT_EQ(cache.stats().invalidations, 1u);
  cache.load_chunk(1);
  EXPECT_EQ(mock->counters().loads, 4u);
  // Kept again from the file as it is now: the next passes take them from the cache.
  for (uint32_t c = 0; c < 2; ++c) cache.load_chunk(c);
  EXPECT_EQ(mock->counters().loads, 4u);
  EXPECT_EQ(cache.stats().invalidations, 1u);
  EXPECT_EQ(cache.stats().chunks, 2u);
}

TEST_F(ChunkCacheTest, DropsEverythingWhenADataFileIsGone) {
  auto mock = std::make_shared<FileMock>(1, 10, path_);
  CachingDeserializer cache(mock, 1 << 20);
  cache.load_chunk(0);
  cache.load_chunk(0);
  std::filesystem::remove(path_);
  cache.load_chunk(0);  // the deserializer says what a missing file means; the mock has its data still
  EXPECT_EQ(mock->counters().loads, 2u);
  EXPECT_EQ(cache.stats().invalidations, 1u);
}

TEST_F(ChunkCacheTest, DoesNotKeepAChunkWhoseLoadBeganBeforeTheCacheWasDropped) {
  auto mock = std::make_shared<FileMock>(2, 10, path_);
  CachingDeserializer cache(mock, 1 << 20);
  cache.load_chunk(0);
  cache.load_chunk(0);
  std::promise<void> loading;
  std::promise<void> go_on;
  std::shared_future<void> may_finish = go_on.get_future().share();
  mock->on_load = [&](uint32_t chunk_id) {
    if (chunk_id != 1) return;
    loading.set_value();
    may_finish.wait();
  };
  std::thread loader([&] { cache.load_chunk(1); });  // reads the file as it was
  loading.get_future().wait();
  std::ofstream(path_) << "other data";
  cache.load_chunk(0);  // the check drops the cache while chunk 1 is being loaded
  go_on.set_value();
  loader.join();
  mock->on_load = nullptr;
  EXPECT_EQ(cache.stats().invalidations, 1u);
  const size_t loads = mock->counters().loads;
  cache.load_chunk(1);  // parsed again: the one loaded across the drop was not kept
  EXPECT_EQ(mock->counters().loads, loads + 1);
}

TEST_F(ChunkCacheTest, DoesNotKeepAChunkWhoseLoadCountedAToleratedError) {
  auto mock = std::make_shared<FileMock>(2, 10, path_);
  mock->bad_chunk = 1;
  CachingDeserializer cache(mock, 1 << 20);
  for (int pass = 0; pass < 3; ++pass) {
    for (uint32_t c = 0; c < 2; ++c) cache.load_chunk(c);
  }
  EXPECT_EQ(mock->counters().loads, 4u);  // chunk 0 once, chunk 1 on every pass
  SkipReport report;
  cache.add_skips(report);
  EXPECT_EQ(report.errors, 3u);
  EXPECT_EQ(cache.stats().chunks, 1u);
}

}  // namespace
}  // namespace cntkio::pipeline
