// Internal interface between the randomizers (which order sequences and fetch their data) and the packers
// (which lay them out into minibatches). Mirrors CNTK's SequenceEnumerator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cntkio/errors.hpp"
#include "cntkio/sequence.hpp"
#include "cntkio/stream.hpp"

namespace cntkio::pipeline {

/// CNTK's requestDataSize / randomizeAuto: an epoch size meaning "one full sweep".
constexpr size_t kRequestDataSize = std::numeric_limits<size_t>::max() >> 2;
/// "No limit" for sweep counts.
constexpr size_t kInfinitelyRepeat = std::numeric_limits<size_t>::max();

/// What the next epoch reads and which share of it this worker gets.
struct EpochConfiguration {
  size_t num_workers = 1;                                 ///< W
  size_t worker_rank = 0;                                 ///< r in [0, W)
  size_t minibatch_size_in_samples = 0;                   ///< requested minibatch size (scheduling samples)
  size_t total_epoch_size_in_samples = kRequestDataSize;  ///< E; kRequestDataSize = one sweep
  size_t total_epoch_size_in_sweeps = kInfinitelyRepeat;  ///< if not kInfinitelyRepeat: E = sweeps * S
  size_t epoch_index = 0;                                 ///< k: the epoch starts at k * E
  bool allow_minibatches_to_cross_sweeps = false;         ///< v1 false, v2 true
  size_t truncation_length = 0;                           ///< BPTT, 0 = off
};

/// Sequences delivered by one GetNextSequences call.
struct Sequences {
  std::vector<std::vector<SequenceData>> data;  ///< [stream][sequence], in delivery order
  std::vector<SequenceKey> keys;                ///< key of each delivered sequence
  std::vector<uint32_t> chunk_ids;              ///< original chunk id of each delivered sequence
  std::vector<ChunkPtr> chunks;                 ///< keeps the data alive
  /// From an enumerator that defers fetching (SequenceEnumerator::defer_fetch): `data` is still empty and
  /// sequence i is sequence fetch_indices[i] of *fetch_chunks[i] (held by `chunks`) until fetch() fills it.
  std::vector<const Chunk*> fetch_chunks;
  std::vector<uint32_t> fetch_indices;
  /// fetch(): the invalid sequences it removed, for count_invalid().
  std::vector<SequenceKey> invalid_removed;
  bool end_of_sweep = false;
  bool end_of_epoch = false;
  size_t num_sequences() const { return keys.size(); }
};

/// Where an enumerator stands: enough to continue exactly from there.
struct EnumeratorState {
  EnumeratorState(size_t at = 0, size_t counter = 0,
                  std::optional<std::vector<std::vector<uint64_t>>> draws = std::nullopt)
      : position(at), sequence_counter(counter), transform_draws(std::move(draws)) {}

  size_t position = 0;  ///< global sample position of the next sequence
  size_t sequence_counter =
      0;  ///< NoRandomizer's running sequence counter (decides worker shares); 0 otherwise
  /// sequence_counter's value in a state that did not say (restore() counts the sequences before `position`).
  static constexpr size_t kCounterUnknown = static_cast<size_t>(-1);
  /// A transform stage with random transforms: per random transform, per slot, the outputs its engine has
  /// given (SequenceTransformer::random_draws). Unset elsewhere; restoring a state without it puts the
  /// engines back at their seeds.
  std::optional<std::vector<std::vector<uint64_t>>> transform_draws;
};

/// Elastic resume: what the workers of an earlier run (possibly a different number) had delivered. A sequence
/// that worker `o` of that run owned is skipped if it starts before `positions[o]`.
struct DeliveredBefore {
  std::vector<size_t> positions;  ///< one per worker of the earlier run; empty = nothing to skip
};

/// Orders sequences (randomized or not), splits them across workers and fetches their data.
class SequenceEnumerator {
 public:
  virtual ~SequenceEnumerator() = default;
  virtual const std::vector<StreamInfo>& streams() const = 0;
  /// Positions the enumerator at the start of epoch `config.epoch_index`.
  virtual void start_epoch(const EpochConfiguration& config) = 0;
  /// Changes workers/minibatch size keeping the current position.
  virtual void set_configuration(const EpochConfiguration& config) = 0;
  /// Next sequences: at most `global_sample_count` scheduling samples of the global timeline and
  /// `local_sample_count` of this worker's, except that the first local sequence is always taken.
  virtual Sequences get_next_sequences(size_t global_sample_count, size_t local_sample_count) = 0;
  /// Global sample position (scheduling units) of the next sequence to deliver.
  virtual size_t current_sample_position() const = 0;
  /// Moves to the first sequence starting at or after `position` (keeps the epoch configuration).
  virtual void set_current_sample_position(size_t position) = 0;
  /// The state to continue from later (restore()).
  virtual EnumeratorState state() const { return {current_sample_position(), 0}; }
  /// Continues exactly from `state` (keeps the epoch configuration).
  virtual void restore(const EnumeratorState& state) { set_current_sample_position(state.position); }
  /// Transform stages: puts the random engines of the transforms where `draws` (EnumeratorState's
  /// transform_draws) says, or back at their seeds when it is unset; the position stays. Others: nothing.
  virtual void reposition_transforms(const std::optional<std::vector<std::vector<uint64_t>>>& draws) {
    (void)draws;
  }
  /// Skips sequences that an earlier run's workers delivered (elastic resume); see DeliveredBefore.
  virtual void skip_delivered(const DeliveredBefore& delivered) = 0;
  /// Deferred fetching, for a packer that packs several minibatches at once on several threads: with it on,
  /// get_next_sequences() chooses the sequences (keys, chunks, budgets, positions: everything that must
  /// happen in order) but leaves their data to fetch(), which may run on any thread, for several results at
  /// once, and count_invalid(), which must then be called for each result in the order they were delivered.
  /// Returns whether the enumerator defers (false, changing nothing, where it cannot).
  virtual bool defer_fetch(bool on) {
    (void)on;
    return false;
  }
  /// Fills the data of a result of get_next_sequences() made while deferring, and removes its invalid
  /// sequences (into sequences.invalid_removed). Throws what fetching them in get_next_sequences() would
  /// have thrown (a malformed record).
  virtual void fetch(Sequences& sequences) const { (void)sequences; }
  /// Counts the invalid sequences that fetch() removed from a result; throws FormatError, as
  /// get_next_sequences() would have, once there are more than the reader tolerates.
  virtual void count_invalid(const Sequences& sequences) { (void)sequences; }
  /// Hands back a result whose minibatch is packed, from the thread that drives the enumerator: its vectors'
  /// memory serves a later result (a minibatch of short sequences otherwise allocates about ten of them).
  /// Its chunks are released now.
  virtual void recycle(Sequences&& used) { (void)used; }
  /// Text form of a key (delegates to the deserializer).
  virtual std::string key_to_string(const SequenceKey& key) const = 0;
  /// Where the sequence with `key` is in the input (Deserializer::sequence_location), for errors.
  virtual SourceLocation sequence_location(const SequenceKey& key) const {
    (void)key;
    return {};
  }
};

}  // namespace cntkio::pipeline
