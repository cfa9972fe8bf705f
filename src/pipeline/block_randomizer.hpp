// BlockRandomizer: CNTK's block randomization on the global timeline (BlockRandomizer.cpp).
//
// Every sweep s shuffles the chunks and then the sequences within rolling windows, both seeded with
// seed_offset + s, which reproduces CNTK's order exactly. All workers walk the same global timeline; worker r
// of W keeps the sequences whose source chunk position is r mod W and only ever loads those chunks. Chunks
// stay cached while the sequence window may still need them, so memory is bounded by the window; those loaded
// at a sweep's end stay for the next sweep's window when re-parsing them could not change anything
// (chunks_outlive_sweep).
//
// Thread-safety: none; one thread drives an instance (the packer's).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "core/thread_pool.hpp"
#include "pipeline/chunk_loader.hpp"
#include "pipeline/chunk_randomizer.hpp"
#include "pipeline/randomizer_common.hpp"
#include "pipeline/sequence_cleaner.hpp"
#include "pipeline/sequence_enumerator.hpp"
#include "pipeline/sequence_randomizer.hpp"

namespace cntkio::pipeline {

class BlockRandomizer : public SequenceEnumerator {
 public:
  /// `window` is R in samples if `sample_based_window`, else in chunks; `seed_offset` is randomizationSeed;
  /// `max_invalid_sequences` is what the invalid-sequence cleaner tolerates. Until start_epoch the
  /// enumerator reads one sweep as worker 0 of 1 from position 0. Throws Error if the input has no data.
  /// With a `pool`, chunks of the window are loaded on its threads ahead of need (same results). With
  /// `times`, chunk loads and waits add to its counters.
  BlockRandomizer(std::shared_ptr<Deserializer> deserializer, size_t window, bool sample_based_window,
                  uint64_t seed_offset, size_t max_invalid_sequences = 0,
                  std::shared_ptr<core::ThreadPool> pool = nullptr,
                  std::shared_ptr<StageTimes> times = nullptr);
  BlockRandomizer(const BlockRandomizer&) = delete;  // members refer to each other
  BlockRandomizer& operator=(const BlockRandomizer&) = delete;

  const std::vector<StreamInfo>& streams() const override { return deserializer_->streams(); }
  void start_epoch(const EpochConfiguration& config) override;
  /// Takes workers, rank and sweep crossing from `config`; the position and epoch stay (callers re-apply
  /// the position with set_current_sample_position, as CNTK's shim does).
  void set_configuration(const EpochConfiguration& config) override;
  Sequences get_next_sequences(size_t global_sample_count, size_t local_sample_count) override;
  size_t current_sample_position() const override { return position_; }
  void set_current_sample_position(size_t position) override;
  void skip_delivered(const DeliveredBefore& delivered) override;
  bool defer_fetch(bool on) override {
    defer_fetch_ = on;
    return true;
  }
  void fetch(Sequences& sequences) const override;
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
  /// Chunks currently held in the cache.
  size_t cached_chunk_count() const { return loader_.size(); }
  /// Sequences delivered from Deserializer::load_sequences while their chunks were still loading, so far.
  uint64_t sequences_loaded_alone() const { return sequences_loaded_alone_; }

 private:
  void prepare_sweep(size_t position);
  void prefetch_window();
  std::pair<size_t, size_t> load(size_t global_budget, size_t local_budget, Sequences& result,
                                 bool at_least_one);
  ChunkPtr chunk_at(size_t source_position);
  void take_chunks(Sequences& result);
  void load_alone_what_is_loading();
  void evict();
  bool chunks_outlive_sweep() const;

  std::shared_ptr<Deserializer> deserializer_;
  ChunkRandomizer chunk_randomizer_;
  SequenceRandomizer sequence_randomizer_;
  SequenceCleaner cleaner_;
  uint64_t seed_offset_;
  size_t sweep_samples_;
  size_t num_chunks_;

  size_t num_workers_ = 1;
  size_t worker_rank_ = 0;
  bool allow_cross_ = false;
  size_t epoch_start_ = 0;
  size_t epoch_size_;
  size_t position_ = 0;
  bool has_sweep_ = false;
  size_t sweep_ = 0;
  // What evict() last kept and prefetched for (sweep, window begin and end, kept end, workers, rank): the
  // same window again needs no walk over every loaded chunk, which per minibatch made reading with many small
  // chunks quadratic (277k one-sequence chunks: 148 s). Invalid after anything that moves or empties it.
  std::array<size_t, 6> evicted_for_{};
  bool evicted_valid_ = false;

  std::vector<size_t> position_of_chunk_;                   // original chunk index -> position in this sweep
  std::unordered_map<uint32_t, size_t> chunk_index_of_id_;  // deserializer chunk id -> original chunk index
  ChunkLoader loader_;
  DeliveredBefore delivered_;   // elastic resume: owner in the earlier run = source position mod its size
  size_t delivered_until_ = 0;  // the skip rule ends here (largest earlier position)
  std::vector<RandomizedSequence> taken_;
  // load(): the chunk of each of taken_, kept alive by `result`; filled and emptied there
  std::vector<const Chunk*> taken_chunks_;
  std::vector<const Chunk*> chunk_of_position_;  // per chunk position: looked up in this load(), or null
  std::vector<size_t> positions_looked_up_;      // the positions set in chunk_of_position_
  std::vector<SequenceData> scratch_;
  // load(): the chunks of load_sequences, each with the chunk id and the indices asked for (ascending)
  std::vector<AloneLoad> alone_;
  std::vector<int32_t> alone_of_taken_;     // per taken_: its slot in alone_, or -1
  std::vector<int32_t> alone_of_position_;  // per chunk position: -2 not seen in this load, -1 none, or slot
  uint64_t sequences_loaded_alone_ = 0;
  bool defer_fetch_ = false;     // get_next_sequences() leaves the data to fetch()
  bool load_alone_next_ = true;  // the next load() may load sequences alone (see load_alone_what_is_loading)
  SequencesPool spare_sequences_;  // results handed back (recycle)
};

}  // namespace cntkio::pipeline
