// A sweep's first randomization window is randomized on the reading thread, which takes a while for a window
// of millions of sequences. Its chunks are known before that (from the chunk randomization alone), so they
// must already be loading on the loader threads while it runs, unless the first minibatch can take its
// sequences alone (then they load after it); and nothing may load before the first read, since a restore or
// reconfiguration may still come.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "core/thread_pool.hpp"
#include "pipeline/block_randomizer.hpp"

namespace cntkio::pipeline {
namespace {

// `chunks` chunks of `per_chunk` one-sample sequences. Listing a chunk's sequences (which the randomizer
// does while randomizing) waits, for up to two seconds, until some chunk has started loading, and records
// whether one had.
class GatedDeserializer : public Deserializer {
 public:
  GatedDeserializer(uint32_t chunks, uint32_t per_chunk,
                    std::chrono::milliseconds wait = std::chrono::seconds(2))
      : chunks_(chunks), per_chunk_(per_chunk), wait_(wait) {
    StreamInfo s;
    s.name = "features";
    s.sample_shape = {1};
    streams_.push_back(s);
  }

  const std::vector<StreamInfo>& streams() const override { return streams_; }

  std::vector<ChunkInfo> chunk_infos() const override {
    std::vector<ChunkInfo> infos(chunks_);
    for (uint32_t c = 0; c < chunks_; ++c) infos[c] = {c, per_chunk_, per_chunk_};
    return infos;
  }

  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const bool loading = started_.wait_for(lock, wait_, [&] { return loads_ > 0; });
      listed_while_loading_ = listed_while_loading_ && loading;
      ++listings_;
    }
    for (uint32_t i = 0; i < per_chunk_; ++i) {
      SequenceInfo info;
      info.index_in_chunk = i;
      info.number_of_samples = 1;
      info.chunk_id = chunk_id;
      info.key.sequence = uint64_t{chunk_id} * per_chunk_ + i;
      out.push_back(info);
    }
  }

  ChunkPtr load_chunk(uint32_t chunk_id) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++loads_;
    }
    started_.notify_all();
    auto chunk = std::make_shared<OneChunk>();
    for (uint32_t i = 0; i < per_chunk_; ++i)
      chunk->values.push_back(float(uint64_t{chunk_id} * per_chunk_ + i));
    return chunk;
  }

  size_t loads() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return loads_;
  }
  // Whether every listing found a chunk loading, and how many there were.
  std::pair<bool, size_t> listings() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return {listed_while_loading_, listings_};
  }

 private:
  struct OneChunk : Chunk {
    void get_sequence(uint32_t index, std::vector<SequenceData>& out) const override {
      SequenceData d;
      d.number_of_samples = 1;
      d.values = &values[index];
      out.push_back(d);
    }
    std::vector<float> values;
  };

  const uint32_t chunks_;
  const uint32_t per_chunk_;
  const std::chrono::milliseconds wait_;
  std::vector<StreamInfo> streams_;
  mutable std::mutex mutex_;
  mutable std::condition_variable started_;
  size_t loads_ = 0;
  mutable size_t listings_ = 0;
  mutable bool listed_while_loading_ = true;
};

TEST(BlockRandomizerOverlap, TheFirstWindowLoadsWhileItIsRandomizedAndNotBeforeTheFirstRead) {
  auto deserializer = std::make_shared<GatedDeserializer>(4, 10);
  auto pool = std::make_shared<core::ThreadPool>(1);
  BlockRandomizer randomizer(deserializer, 4, false, 1, 0, pool);  // a window of all 4 chunks
  EpochConfiguration config;
  config.minibatch_size_in_samples = 5;
  randomizer.start_epoch(config);
  EXPECT_EQ(deserializer->loads(), 0u);  // a restore may still come: nothing is read ahead yet
  EXPECT_EQ(deserializer->listings().second, 0u);

  std::vector<uint64_t> keys;
  for (;;) {
    Sequences s = randomizer.get_next_sequences(5, 5);
    for (const SequenceKey& k : s.keys) keys.push_back(k.sequence);
    if (s.end_of_epoch || s.keys.empty()) break;
  }
  const auto [while_loading, listings] = deserializer->listings();
  EXPECT_EQ(listings, 4u);
  EXPECT_TRUE(while_loading);  // each chunk's listing found the window's chunks loading already
  std::sort(keys.begin(), keys.end());
  ASSERT_EQ(keys.size(), 40u);
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(keys[i], i);
}

// A deserializer whose sequences load alone: the first minibatch waits for the randomization, not for the
// chunks, so the chunks start loading after it and leave it the cores.
class GatedAloneDeserializer : public GatedDeserializer {
 public:
  GatedAloneDeserializer() : GatedDeserializer(4, 10, std::chrono::milliseconds(50)) {}
  bool loads_sequences_alone() const override { return true; }
  ChunkPtr load_sequences(uint32_t chunk_id, std::span<const uint32_t>) override {
    return load_chunk(chunk_id);
  }
};

TEST(BlockRandomizerOverlap, WhereSequencesLoadAloneTheFirstWindowLoadsAfterItIsRandomized) {
  auto deserializer = std::make_shared<GatedAloneDeserializer>();
  auto pool = std::make_shared<core::ThreadPool>(1);
  BlockRandomizer randomizer(deserializer, 4, false, 1, 0, pool);
  EpochConfiguration config;
  config.minibatch_size_in_samples = 5;
  randomizer.start_epoch(config);
  randomizer.get_next_sequences(5, 5);
  const auto [while_loading, listings] = deserializer->listings();
  EXPECT_EQ(listings, 4u);
  EXPECT_FALSE(while_loading);
}

}  // namespace
}  // namespace cntkio::pipeline
