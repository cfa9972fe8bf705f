#include "pipeline/epoch_book.hpp"

#include <limits>
#include <string>

#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"

namespace cntkio::pipeline {
namespace {

void check_worker(size_t rank, size_t count) {
  if (count == 0 || rank >= count) {
    throw UsageError("Worker rank " + std::to_string(rank) + " is not below the number of workers " +
                     std::to_string(count) + ".");
  }
}

}  // namespace

EpochConfiguration EpochBook::v1_epoch(size_t minibatch_size, size_t epoch_index, size_t epoch_size,
                                       size_t worker_rank, size_t num_workers) const {
  if (epoch_size == 0) throw UsageError("Epoch size cannot be 0.");
  if (minibatch_size == 0) throw UsageError("Minibatch size cannot be 0.");
  check_worker(worker_rank, num_workers);
  EpochConfiguration config;
  config.num_workers = num_workers;
  config.worker_rank = worker_rank;
  config.minibatch_size_in_samples = minibatch_size;
  config.total_epoch_size_in_samples = epoch_size;
  config.epoch_index = epoch_index;
  config.allow_minibatches_to_cross_sweeps = false;
  config.truncation_length = truncation_length_;
  return config;
}

void EpochBook::set_v2_limits(size_t max_samples, size_t max_sweeps) {
  if (max_samples != kInfinitelyRepeat && max_sweeps != kInfinitelyRepeat) {
    throw UsageError("max_samples and max_sweeps cannot both be set.");
  }
  if (max_samples == 0 || max_sweeps == 0) throw UsageError("max_samples and max_sweeps must be positive.");
  max_samples_ = max_samples;
  max_sweeps_ = max_sweeps;
  mode_ = Mode::kV2Pending;
}

void EpochBook::check_v2_request(size_t minibatch_size, size_t num_partitions, size_t partition_index) {
  if (minibatch_size == 0) throw UsageError("Minibatch size in samples must be greater than 0.");
  check_worker(partition_index, num_partitions);
}

EpochConfiguration EpochBook::v2_epoch(size_t minibatch_size, size_t num_partitions,
                                       size_t partition_index) const {
  EpochConfiguration config;
  config.num_workers = num_partitions;
  config.worker_rank = partition_index;
  config.minibatch_size_in_samples = minibatch_size;
  config.allow_minibatches_to_cross_sweeps = true;
  config.truncation_length = truncation_length_;
  if (max_sweeps_ != kInfinitelyRepeat) {
    config.total_epoch_size_in_sweeps = max_sweeps_;
  } else if (max_samples_ == kFullDataSweep) {
    config.total_epoch_size_in_samples = kRequestDataSize;
  } else if (max_samples_ == kInfinitelyRepeat) {
    config.total_epoch_size_in_samples = std::numeric_limits<size_t>::max() / 2;  // as CNTK
  } else {
    config.total_epoch_size_in_samples = max_samples_;
  }
  return config;
}

bool EpochBook::v2_split_changes(size_t minibatch_size, size_t num_partitions, size_t partition_index) const {
  return minibatch_size != config_.minibatch_size_in_samples || num_partitions != config_.num_workers ||
         partition_index != config_.worker_rank;
}

const EpochConfiguration& EpochBook::resplit_v2(size_t minibatch_size, size_t num_partitions,
                                                size_t partition_index) {
  config_.minibatch_size_in_samples = minibatch_size;
  config_.num_workers = num_partitions;
  config_.worker_rank = partition_index;
  return config_;
}

void EpochBook::configure(const EpochConfiguration& config) {
  config_ = config;
  configured_ = true;
}

}  // namespace cntkio::pipeline
