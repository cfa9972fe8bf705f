#include "pipeline/transform_replay.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "cntkio/errors.hpp"

namespace cntkio::pipeline {
namespace {

// Equal draws, an engine missing from one side counting as one that has not drawn.
bool same_draws(const TransformReplay::Draws& a, const TransformReplay::Draws& b) {
  if (a.size() != b.size()) return false;
  for (size_t t = 0; t < a.size(); ++t) {
    const size_t n = std::max(a[t].size(), b[t].size());
    for (size_t j = 0; j < n; ++j) {
      if ((j < a[t].size() ? a[t][j] : 0) != (j < b[t].size() ? b[t][j] : 0)) return false;
    }
  }
  return true;
}

}  // namespace

TransformReplay::TransformReplay(const std::optional<Draws>& initial, int trace_level,
                                 core::Logger::Sink sink)
    : logger_(trace_level, std::move(sink)) {
  if (initial) {
    random_transforms_ = true;
    epoch_start_draws_[0] = *initial;
  }
}

TransformReplay::Draws TransformReplay::draws_of(const SequenceEnumerator& enumerator) {
  return enumerator.state().transform_draws.value_or(Draws{});
}

void TransformReplay::start_v1_epoch(size_t epoch_index, const SequenceEnumerator& enumerator) {
  replay_for_epoch_.reset();
  if (!random_transforms_) return;
  auto known = epoch_start_draws_.find(epoch_index);
  if (known == epoch_start_draws_.end() || !same_draws(draws_of(enumerator), known->second)) {
    replay_for_epoch_ = epoch_index;
  }
  epoch_draws_exact_ = true;
}

void TransformReplay::start_v2() {
  replay_for_epoch_.reset();
  epoch_draws_exact_ = false;
}

void TransformReplay::check_restorable(const ReaderState& state) const {
  if (state.transform_draws && !state.transform_draws->empty() && !random_transforms_) {
    throw UsageError(
        "The reader state records random transform draws, but this reader has no random "
        "transforms (a state of another reader?).");
  }
}

void TransformReplay::restored(const ReaderState& state) {
  replay_for_epoch_.reset();
  epoch_draws_exact_ = state.transform_draws.has_value() && state.worker_positions.empty();
}

void TransformReplay::epoch_ended(size_t epoch_index, bool v1, const std::optional<Draws>& after) {
  if (v1 && epoch_draws_exact_ && after) epoch_start_draws_[epoch_index + 1] = *after;
}

bool TransformReplay::position_engines(SequenceEnumerator& enumerator, Packer& packer,
                                       const EpochConfiguration& config) {
  if (!replay_for_epoch_) return false;
  const size_t target = *replay_for_epoch_;
  replay_for_epoch_.reset();
  auto known = std::prev(epoch_start_draws_.upper_bound(target));  // epoch 0 is always known
  const size_t from = known->first;
  enumerator.reposition_transforms(known->second);
  if (from < target) {
    logger_.log(core::LogLevel::kWarning,
                "WARNING: epoch " + std::to_string(target) +
                    " has random image transforms, and this reader's random generators are not where an "
                    "uninterrupted run has them at its start (a new reader, or epochs skipped or cut short): "
                    "reading epochs " +
                    std::to_string(from) + " to " + std::to_string(target - 1) +
                    " again and discarding them to get there. This is slow; restoring a checkpoint taken in "
                    "that run avoids it.");
  }
  EpochConfiguration replay = config;
  for (size_t epoch = from; epoch < target; ++epoch) {
    replay.epoch_index = epoch;
    enumerator.start_epoch(replay);
    enumerator.skip_delivered({});
    packer.set_configuration(replay);
    while (!packer.read_minibatch().end_of_epoch) {
    }
    epoch_start_draws_[epoch + 1] = draws_of(enumerator);
  }
  return from < target;
}

}  // namespace cntkio::pipeline
