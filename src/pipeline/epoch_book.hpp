// EpochBook: which epoch a source reads and whether it is over. v1 (start_epoch): epoch k of E samples with
// minibatches that stop at sweep ends; v2 (set_v2_limits, next_minibatch_v2): one endless epoch, index 0,
// limited by a sample or sweep count, whose minibatches cross sweeps and whose worker split and minibatch
// size may change between reads (spec pipeline.md §4, §8.2, §8.3). The book checks the caller's arguments
// and makes the EpochConfiguration; the enumerator then ends the epoch where that configuration says.
#pragma once

#include <cstddef>

#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline {

class EpochBook {
 public:
  /// `truncation_length`: truncated BPTT's length, passed on in every configuration (0: not truncated).
  explicit EpochBook(size_t truncation_length) : truncation_length_(truncation_length) {}

  /// The configuration of v1 epoch `epoch_index` of `epoch_size` samples (kFullSweep: one
  /// sweep). Throws UsageError for a size of 0 or a rank not below the number of workers.
  EpochConfiguration v1_epoch(size_t minibatch_size, size_t epoch_index, size_t epoch_size,
                              size_t worker_rank, size_t num_workers) const;

  /// v2 limits (MinibatchSource::set_v2_limits); the next v2 read starts the epoch again. Throws UsageError
  /// when both are set or one is 0.
  void set_v2_limits(size_t max_samples, size_t max_sweeps);
  /// Throws UsageError for a v2 request of 0 samples or a partition not below the number of partitions.
  static void check_v2_request(size_t minibatch_size, size_t num_partitions, size_t partition_index);
  /// Whether the next v2 read starts the v2 epoch (none started since the limits or a v1 epoch).
  bool v2_start_due() const { return mode_ != Mode::kV2Reading; }
  /// The configuration of the v2 epoch under the current limits.
  EpochConfiguration v2_epoch(size_t minibatch_size, size_t num_partitions, size_t partition_index) const;
  /// Whether a v2 read with these arguments changes the minibatch size or the worker split.
  bool v2_split_changes(size_t minibatch_size, size_t num_partitions, size_t partition_index) const;
  /// The current configuration with this minibatch size and worker split (the position stays).
  const EpochConfiguration& resplit_v2(size_t minibatch_size, size_t num_partitions, size_t partition_index);

  /// The epoch `config` is being set up (its reading is not open yet).
  void configure(const EpochConfiguration& config);
  /// Reading of the configured epoch is open (after configure, or after a restore repositioned it).
  void open() { epoch_over_ = false; }
  /// The configured epoch was set up by start_epoch / by the first v2 read.
  void mark_v1() { mode_ = Mode::kV1; }
  void mark_v2_reading() { mode_ = Mode::kV2Reading; }
  /// The last minibatch of the epoch was taken.
  void end_epoch() { epoch_over_ = true; }

  bool epoch_over() const { return epoch_over_; }
  /// Reading v1 epochs (also before the first start_epoch, unless v2 limits were set).
  bool v1() const { return mode_ == Mode::kV1; }
  /// A restore now would have no epoch to position: it waits for start_epoch or the first v2 read.
  bool restore_waits() const { return !configured_ || mode_ == Mode::kV2Pending; }
  const EpochConfiguration& config() const { return config_; }

 private:
  enum class Mode { kV1, kV2Pending, kV2Reading };

  size_t truncation_length_;
  size_t max_samples_ = kInfinitelyRepeat;
  size_t max_sweeps_ = kInfinitelyRepeat;
  Mode mode_ = Mode::kV1;
  EpochConfiguration config_;
  bool configured_ = false;
  bool epoch_over_ = true;
};

}  // namespace cntkio::pipeline
