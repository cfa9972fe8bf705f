// NoRandomizer: sequences in their original order, endlessly repeated (CNTK's NoRandomizer.cpp).
//
// Worker r of W keeps the sequences whose running global sequence counter is r mod W. Like CNTK, the
// counter is set from the position only by start_epoch / set_current_sample_position and keeps running
// across a sweep wrap inside an epoch (no sequence is lost or duplicated either way). Only the chunk of the
// current sequence is kept loaded.
//
// Thread-safety: none; one thread drives an instance (the packer's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "core/thread_pool.hpp"
#include "pipeline/chunk_loader.hpp"
#include "pipeline/randomizer_common.hpp"
#include "pipeline/sequence_cleaner.hpp"
#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline {

class NoRandomizer : public SequenceEnumerator {
 public:
  /// Until start_epoch the enumerator reads one sweep as worker 0 of 1 from position 0.
  /// Throws Error if the input has no data.
  /// With a `pool`, the next chunks (as many as the pool has threads) are loaded ahead of need. With `times`,
  /// chunk loads and waits add to its counters.
  explicit NoRandomizer(std::shared_ptr<Deserializer> deserializer, size_t max_invalid_sequences = 0,
                        std::shared_ptr<core::ThreadPool> pool = nullptr,
                        std::shared_ptr<StageTimes> times = nullptr);

  const std::vector<StreamInfo>& streams() const override { return deserializer_->streams(); }
  void start_epoch(const EpochConfiguration& config) override;
  /// Takes workers, rank and sweep crossing from `config`; the position, counter and epoch stay.
  void set_configuration(const EpochConfiguration& config) override;
  Sequences get_next_sequences(size_t global_sample_count, size_t local_sample_count) override;
  size_t current_sample_position() const override { return position_; }
  EnumeratorState state() const override { return {position_, global_sequence_}; }
  void restore(const EnumeratorState& state) override;
  void skip_delivered(const DeliveredBefore& delivered) override;
  void set_current_sample_position(size_t position) override;
  bool defer_fetch(bool on) override {
    defer_fetch_ = on;
    return true;
  }
  void fetch(Sequences& sequences) const override { fetch_deferred(sequences); }
  void count_invalid(const Sequences& sequences) override {
    cleaner_.count(sequences.invalid_removed, *deserializer_);
  }
  void recycle(Sequences&& used) override { spare_sequences_.give(std::move(used)); }
  std::string key_to_string(const SequenceKey& key) const override {
    return deserializer_->key_to_string(key);
  }
  SourceLocation sequence_location(const SequenceKey& key) const override {
    return deserializer_->sequence_location(key);
  }

  /// Sweep size S in scheduling samples.
  size_t sweep_size() const { return sweep_samples_; }
  /// Invalid sequences dropped so far.
  size_t invalid_sequences_removed() const { return cleaner_.removed(); }
  /// The keys of the first invalid sequences dropped (up to 10).
  std::vector<std::string> invalid_sequence_keys() const { return cleaner_.first_removed_keys(); }
  /// Chunks currently held in the cache (at most one).
  size_t cached_chunk_count() const { return cached_chunk_ ? 1 : 0; }
  /// Sequences delivered from Deserializer::load_sequences rather than from their chunks, so far.
  uint64_t sequences_loaded_alone() const { return sequences_loaded_alone_; }

 private:
  struct Taken {
    uint32_t chunk_id;
    uint32_t index_in_chunk;
    SequenceKey key;
  };

  void enter_chunk(size_t chunk);
  void move_to_next_sequence();
  void load_alone_what_is_loading();
  void prefetch_ahead(size_t first);

  std::shared_ptr<Deserializer> deserializer_;
  std::vector<ChunkInfo> chunks_;
  std::vector<size_t> chunk_sample_start_;
  std::vector<size_t> chunk_sequence_start_;
  SequenceCleaner cleaner_;
  size_t sweep_samples_;

  size_t num_workers_ = 1;
  size_t worker_rank_ = 0;
  bool allow_cross_ = false;
  size_t epoch_end_;
  size_t position_ = 0;
  size_t global_sequence_ = 0;  // decimation counter
  DeliveredBefore delivered_;   // elastic resume: owner in the earlier run = counter mod its size
  size_t delivered_until_ = 0;
  size_t chunk_ = 0;  // current chunk (index into chunks_)
  size_t sequence_in_chunk_ = 0;
  std::vector<SequenceInfo> sequences_;  // of the current chunk

  uint32_t cached_chunk_id_ = 0;
  ChunkPtr cached_chunk_;
  size_t prefetch_depth_;
  ChunkLoader loader_;
  std::vector<Taken> taken_;
  std::vector<SequenceData> scratch_;
  bool load_alone_next_ = true;  // the next minibatch is the first from a new position
  bool defer_fetch_ = false;     // get_next_sequences() leaves the data to fetch()
  std::vector<AloneLoad> alone_;
  uint64_t sequences_loaded_alone_ = 0;
  SequencesPool spare_sequences_;  // results handed back (recycle)
};

}  // namespace cntkio::pipeline
