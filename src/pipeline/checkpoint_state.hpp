// CheckpointState: where a source stands after the last minibatch it returned (the enumerator's state and
// what truncated BPTT's slots hold), that state as a ReaderState, and positioning the enumerator and packer
// there again: at an epoch start, after a new worker split, or at a restored ReaderState (spec pipeline.md
// §9). A restore of a truncated-BPTT state taken with the same workers pulls the sequences its slots held
// again, so nothing pulled but not emitted is lost (CNTK loses them; docs/differences-from-cntk.md).
//
// Thread-safety: none; the caller makes sure nothing reads the enumerator or packer meanwhile.
#pragma once

#include <optional>

#include "cntkio/minibatch_source.hpp"
#include "pipeline/packer.hpp"
#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline {

class CheckpointState {
 public:
  /// Both must outlive this object.
  CheckpointState(SequenceEnumerator& enumerator, Packer& packer)
      : enumerator_(enumerator), packer_(packer) {}

  /// Positions the enumerator and the packer at the start of the epoch `config` describes.
  void begin(const EpochConfiguration& config);
  /// A new minibatch size or worker split, continuing from the last minibatch returned. The packer starts
  /// empty, except truncated BPTT's slots when `same_workers` and the new size gives as many slots: they keep
  /// what they held.
  void resplit(const EpochConfiguration& config, bool same_workers);
  /// Positions the enumerator and the packer at `state` (any ReaderState, also a merged one or one of another
  /// configuration) in the epoch `config` describes.
  void restore(const ReaderState& state, const EpochConfiguration& config);

  /// The states right after the minibatch just taken (ReadResult's).
  void record(EnumeratorState after, PackerState packer_after);
  /// The enumerator's state changed in place (its random engines were repositioned).
  void record_enumerator() { state_ = enumerator_.state(); }

  /// The ReaderState of the last minibatch taken, read with the workers of `config`.
  ReaderState reader_state(const EpochConfiguration& config) const;
  /// Global sample position after the last minibatch taken.
  size_t position() const { return state_.position; }

  /// A restore that has no epoch to position yet: kept until take_pending().
  void defer(const ReaderState& state) { pending_ = state; }
  bool restore_pending() const { return pending_.has_value(); }
  /// The restore kept by defer(), if any.
  const std::optional<ReaderState>& pending() const { return pending_; }
  std::optional<ReaderState> take_pending();

 private:
  bool restore_slots(const ReaderState& state, const EpochConfiguration& config);
  void record_start();

  SequenceEnumerator& enumerator_;
  Packer& packer_;
  EnumeratorState state_;
  PackerState packer_state_;  // truncated BPTT: what the slots hold after the last minibatch
  std::optional<ReaderState> pending_;
};

}  // namespace cntkio::pipeline
