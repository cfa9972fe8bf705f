/// @file
/// MinibatchSource: the composable reader. Deserializers → (bundler) → randomizer → packer → minibatches.
///
/// Built from a CNTK reader config section (`MinibatchSource::from_config`), it reproduces CNTK's minibatch
/// stream: the same sequences in the same order and layout. Epochs follow CNTK's v1 (BrainScript) rules:
/// epoch k covers the samples [k·E, (k+1)·E) of the endless global timeline, and `next_minibatch` returns
/// false once the epoch is over.
///
/// Thread-safety: not thread-safe; use one MinibatchSource per consuming thread. It may use background
/// threads internally.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/minibatch.hpp"
#include "cntkio/reader_spec.hpp"
#include "cntkio/skip_report.hpp"
#include "cntkio/stream.hpp"

namespace cntkio {

/// Epoch size meaning "one full sweep over the data".
constexpr size_t kFullSweep = static_cast<size_t>(-1) >> 2;
/// v2 limits: read forever (cntk.io's INFINITELY_REPEAT).
constexpr size_t kInfinitelyRepeat = static_cast<size_t>(-1);
/// v2 sample limit meaning "one sweep" (cntk.io's FULL_DATA_SWEEP).
constexpr size_t kFullDataSweep = static_cast<size_t>(-1) - 1;

/// Where a reader stands, for checkpoints. A handful of integers; the same shape before and after the first
/// minibatch. Serialized as JSON, with CNTK's key `minibatchSourcePosition` for the position.
struct ReaderState {
  uint64_t position = 0;          ///< global sample position after the last minibatch returned
  uint64_t sequence_counter = 0;  ///< running sequence counter of unrandomized reading (worker shares)
  /// False for a state without a counter (CNTK's own checkpoints hold the position only): the reader then
  /// counts the sequences before the position, as an uninterrupted run does.
  bool sequence_counter_known = true;
  uint64_t num_workers = 1;  ///< workers of the run that took the state
  uint64_t worker_rank = 0;  ///< rank that took it
  /// Merged states (merge_reader_states): the position of every worker of that run; empty otherwise.
  std::vector<uint64_t> worker_positions;
  /// Merged states of a run whose every worker had read: each worker's own state, by rank. A restore by as
  /// many workers takes its rank's (the exact continuation, truncated-BPTT slots and transform draws
  /// included); other worker counts continue from the positions (elastic resume).
  std::vector<ReaderState> worker_states;

  /// Truncated BPTT: the sequences pulled into the packer's parallel slots but not yet fully emitted. A
  /// restore (same minibatch size and workers) reads them again from `position` on, so the stream continues
  /// exactly.
  struct BpttSlots {
    uint64_t position = 0;          ///< reader position before the oldest pull still queued
    uint64_t sequence_counter = 0;  ///< running sequence counter at that position
    /// Every pull made since `position`, in order: {slot it went to, how many of its sequences are queued}.
    std::vector<std::pair<uint64_t, uint64_t>> pulls;
    std::vector<uint64_t> cursors;  ///< per slot: samples of its front sequence already emitted
    /// All fields equal.
    friend bool operator==(const BpttSlots&, const BpttSlots&) = default;
  };
  std::optional<BpttSlots> bptt;  ///< set only by a truncated-BPTT reader

  /// A reader with random image transforms (crop, colour, intensity): per random transform (in stream and
  /// chain order), per minibatch position, how many 32-bit outputs its random engine has given. A restore
  /// re-seeds every engine and discards that many outputs, so the transforms continue exactly. Unset for
  /// readers without random transforms and in merged states (merge_reader_states: the draws of several
  /// workers cannot be combined); a state without it restarts the engines from their seeds.
  std::optional<std::vector<std::vector<uint64_t>>> transform_draws;

  /// `{"minibatchSourcePosition": N, ...}` with every field; from_json reads it back.
  std::string to_json() const;
  /// Parses to_json()'s output (also CNTK's `{"minibatchSourcePosition": N}`). Throws UsageError.
  static ReaderState from_json(const std::string& json);
  /// All fields equal.
  friend bool operator==(const ReaderState&, const ReaderState&) = default;
};

/// Combines the states of all W workers of a run (one per rank, any order) into one state from which any
/// number of workers can continue the global stream with no sample lost or repeated (elastic resume). A
/// worker that has not read yet may give its initial state (a v2 reader learns its rank on its first read).
ReaderState merge_reader_states(const std::vector<ReaderState>& states);

/// The state a worker (`worker_rank` of `num_workers`) restores from `state`: its own state where `state` is
/// a merged one holding the states of as many workers, else `state` itself.
const ReaderState& state_for_worker(const ReaderState& state, uint64_t num_workers, uint64_t worker_rank);

/// Where a reader's time went and what its chunk cache holds (MinibatchSource::stats), for `cntkio bench`.
/// Times are seconds summed since the reader was created; stages that run on several threads at once (chunk
/// loads) sum their threads' times, so they can exceed the wall time.
struct SourceStats {
  double index_s = 0;  ///< creating the reader: opening and indexing the data, setting up the stages
  double load_s = 0;   ///< loading (parsing) chunks, summed over the threads that loaded them
  /// Choosing the next sequences from the loaded chunks (randomizer, transforms) and fetching their data,
  /// except where pack_s has the fetching.
  double randomize_s = 0;
  /// Packing sequences into minibatches. With block randomization, sequence or frame packing and no
  /// transforms, the packer fetches the sequences' data too (for the minibatches read ahead, a group at a
  /// time on the loader threads: then a group counts its wall time, not the sum over its threads).
  double pack_s = 0;
  double chunk_wait_s = 0;            ///< the reading thread waiting for chunks still being loaded
  double minibatch_wait_s = 0;        ///< the caller waiting for minibatches being read ahead
  std::vector<double> loader_busy_s;  ///< per chunk-loading thread: the time it ran tasks

  /// The cache of decoded chunks (SourceOptions::chunk_cache_bytes); all 0 when it is off.
  struct ChunkCache {
    uint64_t budget_bytes = 0;   ///< what it may hold
    uint64_t bytes = 0;          ///< what it holds now (the data of its chunks)
    uint64_t chunks = 0;         ///< the chunks it holds now
    uint64_t hits = 0;           ///< chunk loads it answered
    uint64_t misses = 0;         ///< chunk loads it passed to the deserializer
    uint64_t invalidations = 0;  ///< times it was dropped because a data file changed
  };
  ChunkCache chunk_cache;  ///< the chunk cache's figures
};

/// A reader: delivers minibatches epoch after epoch (v1) or up to a sample/sweep limit (v2), and its state
/// for checkpoints. Create one with from_config.
class MinibatchSource {
 public:
  virtual ~MinibatchSource() = default;

  /// Creates the reader described by a reader section (stand-alone `readerType` or composite
  /// `deserializers`). Relative file paths resolve against the current directory.
  static std::unique_ptr<MinibatchSource> from_config(const Config& reader_section);
  /// Creates the reader `spec` describes (cntkio/reader_spec.hpp): loads the modules it names, applies the
  /// defaults its formats imply, and builds the pipeline. Throws ConfigError, UsageError (options of the
  /// wrong type), FormatError and IoError from the deserializers.
  static std::unique_ptr<MinibatchSource> create(const ReaderSpec& spec);

  /// What each deserializer of the reader reads (Deserializer::describe), headed by a line with its type.
  virtual std::vector<std::string> describe() const { return {}; }

  /// The chunks that distributed reading shares out, whole, among the workers (CNTK's partitioning): the
  /// chunks with data of the first deserializer, whose chunks a composite reader's are. With fewer of them
  /// than workers, some workers read nothing. 0 where unknown.
  virtual size_t partition_chunks() const { return 0; }

  /// The streams of the minibatches, in order.
  virtual const std::vector<StreamInfo>& streams() const = 0;

  /// Starts epoch `epoch_index` of `epoch_size` samples (kFullSweep: one sweep) with minibatches of
  /// `minibatch_size` samples, reading the share of worker `worker_rank` of `num_workers`.
  virtual void start_epoch(size_t minibatch_size, size_t epoch_index, size_t epoch_size,
                           size_t worker_rank = 0, size_t num_workers = 1) = 0;

  /// Reads the next minibatch of the epoch into `out`; false when the epoch has no more data.
  virtual bool next_minibatch(Minibatch& out) = 0;

  /// Global sample position (scheduling samples) after the last minibatch returned.
  virtual size_t current_sample_position() const = 0;

  /// Samples (scheduling samples) in one sweep of the data: where epoch 1 of full-sweep epochs starts.
  /// Configures the reader as start_epoch(1, 1, kFullSweep) does, without reading ahead, so a caller that
  /// only wants the number and then reconfigures pays no chunk loads.
  virtual size_t sweep_size() {
    start_epoch(1, 1, kFullSweep);
    return current_sample_position();
  }

  /// v2 (cntk.io) reading: one endless epoch limited by `max_samples` (kInfinitelyRepeat, kFullDataSweep or a
  /// count) or `max_sweeps`; minibatches may cross sweep boundaries. The first next_minibatch_v2 call starts
  /// it.
  virtual void set_v2_limits(size_t max_samples, size_t max_sweeps) = 0;
  /// v2: the next minibatch of about `minibatch_size` samples for partition `partition_index` of
  /// `num_partitions` (they may change between calls); false once the limit was reached.
  virtual bool next_minibatch_v2(size_t minibatch_size, size_t num_partitions, size_t partition_index,
                                 Minibatch& out) = 0;

  /// The state after the last minibatch returned (v1 or v2).
  virtual ReaderState state() const = 0;
  /// Continues from `state`: this worker's own state, or a merged one (merge_reader_states) taken with any
  /// number of workers. v1: call after start_epoch of the epoch the state belongs to.
  virtual void restore(const ReaderState& state) = 0;

  /// What was skipped under maxErrors so far (may be called at any time, also after an error).
  virtual SkipReport skip_report() const { return {}; }

  /// The shared indexes of this reader's deserializers (Deserializer::shared_index). Holding them lets
  /// readers created later over the same data skip indexing, in this process and in processes forked from
  /// it; empty when there are none.
  virtual std::vector<std::shared_ptr<const void>> shared_indexes() const { return {}; }

  /// With `on`, minibatches packed from now on leave their values in the loaded chunks
  /// (Minibatch::deferred_values) instead of copying them into CNTK's layout, for a consumer that writes
  /// them once in a layout of its own (cntkio's Python module writes PyTorch items so); minibatches already
  /// read ahead keep their values. Returns false, changing nothing, where the packing cannot defer
  /// (truncated BPTT, whose minibatches cut sequences).
  virtual bool defer_values(bool on) {
    (void)on;
    return false;
  }

  /// Where the time went so far and what the chunk cache holds (SourceStats); zeros where not measured.
  virtual SourceStats stats() const { return {}; }
};

}  // namespace cntkio
