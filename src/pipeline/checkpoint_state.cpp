#include "pipeline/checkpoint_state.hpp"

#include <utility>

namespace cntkio::pipeline {

void CheckpointState::begin(const EpochConfiguration& config) {
  enumerator_.start_epoch(config);
  enumerator_.skip_delivered({});
  packer_.set_configuration(config);
  record_start();
}

void CheckpointState::resplit(const EpochConfiguration& config, bool same_workers) {
  enumerator_.set_configuration(config);
  packer_.set_configuration(config);
  // Truncated BPTT with as many slots for the same worker: the slots are pulled again as a restore pulls
  // them, and the stream goes on as if the size had not changed (CNTK empties them: what they held is lost).
  if (same_workers && packer_state_.present &&
      packer_state_.cursors.size() == packer_.state().cursors.size()) {
    enumerator_.restore(packer_state_.replay_from);
    if (packer_.restore(packer_state_)) {
      packer_state_ = packer_.state();
      return;
    }
    packer_.set_configuration(config);
  }
  enumerator_.restore(state_);
  packer_state_ = packer_.state();
}

void CheckpointState::restore(const ReaderState& state, const EpochConfiguration& config) {
  if (restore_slots(state, config)) return;
  const size_t counter = state.sequence_counter_known ? static_cast<size_t>(state.sequence_counter)
                                                      : EnumeratorState::kCounterUnknown;
  EnumeratorState target{static_cast<size_t>(state.position), counter, state.transform_draws};
  DeliveredBefore delivered;
  for (uint64_t p : state.worker_positions) delivered.positions.push_back(static_cast<size_t>(p));
  enumerator_.restore(target);
  enumerator_.skip_delivered(delivered);
  packer_.set_configuration(config);
  record_start();
}

// Truncated BPTT, same workers as the run that took `state`: rewinds to the oldest sequence still queued in a
// slot and pulls every sequence again into its slot. False when the state holds no slots or does not fit this
// configuration (the caller then restores the position alone, as CNTK does).
bool CheckpointState::restore_slots(const ReaderState& state, const EpochConfiguration& config) {
  if (!state.bptt || !state.worker_positions.empty() || state.num_workers != config.num_workers ||
      state.worker_rank != config.worker_rank) {
    return false;
  }
  PackerState slots;
  slots.present = true;
  slots.replay_from = {static_cast<size_t>(state.bptt->position),
                       static_cast<size_t>(state.bptt->sequence_counter), state.transform_draws};
  for (const auto& [slot, queued] : state.bptt->pulls) {
    slots.pulls.push_back({static_cast<size_t>(slot), static_cast<size_t>(queued)});
  }
  slots.cursors.assign(state.bptt->cursors.begin(), state.bptt->cursors.end());
  packer_.set_configuration(config);
  if (slots.cursors.size() != packer_.state().cursors.size()) return false;
  enumerator_.restore(slots.replay_from);
  enumerator_.skip_delivered({});
  if (!packer_.restore(slots)) return false;
  record_start();
  return true;
}

void CheckpointState::record(EnumeratorState after, PackerState packer_after) {
  state_ = std::move(after);
  packer_state_ = std::move(packer_after);
}

void CheckpointState::record_start() {
  state_ = enumerator_.state();
  packer_state_ = packer_.state();
}

ReaderState CheckpointState::reader_state(const EpochConfiguration& config) const {
  ReaderState s;
  s.position = state_.position;
  s.sequence_counter = state_.sequence_counter;
  s.transform_draws = state_.transform_draws;
  s.num_workers = config.num_workers;
  s.worker_rank = config.worker_rank;
  if (packer_state_.present) {
    ReaderState::BpttSlots slots;
    slots.position = packer_state_.replay_from.position;
    slots.sequence_counter = packer_state_.replay_from.sequence_counter;
    for (const auto& pull : packer_state_.pulls) slots.pulls.emplace_back(pull.slot, pull.queued);
    slots.cursors.assign(packer_state_.cursors.begin(), packer_state_.cursors.end());
    s.bptt = std::move(slots);
  }
  return s;
}

std::optional<ReaderState> CheckpointState::take_pending() {
  std::optional<ReaderState> state = std::move(pending_);
  pending_.reset();
  return state;
}

}  // namespace cntkio::pipeline
