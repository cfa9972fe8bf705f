// ChunkLoader: background loads start only when flushed (or a chunk is asked for), and queued loads that
// are dropped before they start never run.
#include "pipeline/chunk_loader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cntkio::pipeline {
namespace {

// Chunks of one empty sequence each; every load is recorded, and loads wait while the gate is closed.
class GatedDeserializer : public Deserializer {
 public:
  explicit GatedDeserializer(size_t chunks) : chunks_(chunks) {}

  const std::vector<StreamInfo>& streams() const override { return streams_; }
  std::vector<ChunkInfo> chunk_infos() const override {
    std::vector<ChunkInfo> out;
    for (size_t c = 0; c < chunks_; ++c) out.push_back(ChunkInfo{static_cast<uint32_t>(c), 1, 1});
    return out;
  }
  void sequence_infos_for_chunk(uint32_t, std::vector<SequenceInfo>&) const override {}
  ChunkPtr load_chunk(uint32_t chunk_id) override {
    std::unique_lock<std::mutex> lock(mutex_);
    started_.push_back(chunk_id);
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
    return std::make_shared<EmptyChunk>();
  }

  void set_gate(bool open) {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = open;
    changed_.notify_all();
  }
  // Waits until `n` loads have started (or a second has passed); returns the chunk ids started so far.
  std::vector<uint32_t> started(size_t n = 0) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(1), [&] { return started_.size() >= n; });
    return started_;
  }

 private:
  struct EmptyChunk : Chunk {
    void get_sequence(uint32_t, std::vector<SequenceData>&) const override {}
  };
  size_t chunks_;
  std::vector<StreamInfo> streams_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<uint32_t> started_;
  bool open_ = true;
};

TEST(ChunkLoader, PrefetchWaitsForAFlushAndDroppedWishesNeverLoad) {
  auto deserializer = std::make_shared<GatedDeserializer>(4);
  ChunkLoader loader(deserializer, std::make_shared<core::ThreadPool>(2));
  loader.prefetch(0);
  loader.prefetch(1);
  loader.prefetch(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(deserializer->started().empty());  // nothing before a flush
  loader.retain_if([](uint32_t id) { return id != 1; });
  loader.flush();
  EXPECT_EQ(deserializer->started(2).size(), 2u);
  EXPECT_NE(loader.get(2), nullptr);
  EXPECT_NE(loader.get(0), nullptr);
  std::vector<uint32_t> started = deserializer->started();
  std::sort(started.begin(), started.end());
  EXPECT_EQ(started, (std::vector<uint32_t>{0, 2}));
  EXPECT_NE(loader.get(3), nullptr);  // asked for: loaded now, on this thread
  EXPECT_EQ(deserializer->started().size(), 3u);
}

TEST(ChunkLoader, QueuedLoadsDroppedBeforeTheyStartAreCancelled) {
  auto deserializer = std::make_shared<GatedDeserializer>(4);
  deserializer->set_gate(false);
  auto pool = std::make_shared<core::ThreadPool>(1);
  ChunkLoader loader(deserializer, pool);
  for (uint32_t c = 0; c < 4; ++c) loader.prefetch(c);
  loader.flush();
  ASSERT_EQ(deserializer->started(1), (std::vector<uint32_t>{0}));  // the one thread waits in chunk 0
  loader.retain_if([](uint32_t id) { return id == 3; });            // 1 and 2 are still queued
  deserializer->set_gate(true);
  EXPECT_NE(loader.get(3), nullptr);
  EXPECT_EQ(deserializer->started(), (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(loader.cancelled_loads(), 2u);
}

}  // namespace
}  // namespace cntkio::pipeline
