// TransformReplay: where the random engines of a reader's transforms (image crop, colour, ...) stand at the
// start of each v1 epoch. Epoch k starts with the engines where an uninterrupted run has them after epochs
// 0..k-1, so that epoch k reads the same whether the reader read the epochs before it or not. The book
// records the draws at each epoch start it saw exactly; start_epoch(k) with the engines anywhere else (a
// fresh reader, epochs skipped or cut short, an earlier epoch again) leaves a replay due, which puts the
// engines there before the epoch's first read: from the latest known epoch start at or before k, the epochs
// in between are read again and discarded. A restore positions the engines itself (its recorded draws).
//
// Thread-safety: none; position_engines reads the enumerator and packer, nothing else may meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "cntkio/minibatch_source.hpp"
#include "core/logger.hpp"
#include "pipeline/packer.hpp"
#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline {

class TransformReplay {
 public:
  /// EnumeratorState::transform_draws: per random transform, per slot, the outputs its engine has given.
  using Draws = std::vector<std::vector<uint64_t>>;

  /// `initial`: the enumerator's draws before anything was read (unset: no random transforms, and then
  /// nothing here does anything). The warning about a slow replay goes to a Logger(trace_level, sink).
  explicit TransformReplay(const std::optional<Draws>& initial, int trace_level = 1,
                           core::Logger::Sink sink = {});

  /// v1 epoch `epoch_index` starts: a replay is due unless the enumerator's engines are at its known start.
  void start_v1_epoch(size_t epoch_index, const SequenceEnumerator& enumerator);
  /// The v2 epoch starts (its engines stay where they are; its end is no v1 epoch start).
  void start_v2();
  /// Throws UsageError when `state` records draws but this reader has no random transforms.
  void check_restorable(const ReaderState& state) const;
  /// `state` was restored: it positioned the engines. Its epoch's end is a known epoch start only when it
  /// recorded this worker's draws.
  void restored(const ReaderState& state);
  /// The epoch `epoch_index` read its last minibatch; `after` are the draws after it. In v1 epochs begun
  /// with the engines of an uninterrupted run, these start epoch `epoch_index` + 1.
  void epoch_ended(size_t epoch_index, bool v1, const std::optional<Draws>& after);

  /// start_v1_epoch left the engines to be positioned.
  bool replay_due() const { return replay_for_epoch_.has_value(); }
  /// Positions the engines where they are at the start of the due epoch of `config` (`config` with that
  /// epoch's index, as start_v1_epoch left it): repositions them at the latest known start, then reads the
  /// epochs in between with `config`'s settings and drops them. True when it read epochs: the caller then
  /// starts the epoch again (the enumerator and packer stand at the end of the epoch before).
  bool position_engines(SequenceEnumerator& enumerator, Packer& packer, const EpochConfiguration& config);

 private:
  static Draws draws_of(const SequenceEnumerator& enumerator);

  bool random_transforms_ = false;
  std::map<size_t, Draws> epoch_start_draws_;  // the draws at the start of v1 epoch k
  std::optional<size_t> replay_for_epoch_;     // start_v1_epoch(k) found the engines elsewhere than k's start
  bool epoch_draws_exact_ = false;             // this v1 epoch began with the engines of an uninterrupted run
  core::Logger logger_;
};

}  // namespace cntkio::pipeline
