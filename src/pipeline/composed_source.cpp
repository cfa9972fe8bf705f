// ComposedSource: the MinibatchSource that drives a packer over an enumerator (randomizer, transforms):
// CNTK's v1 epochs and v2 limits, read-ahead on a thread of its own, checkpoints (with truncated BPTT's
// slots and the random transforms' draws) and the skip report. MinibatchSource::create assembles one.
#include "pipeline/composed_source.hpp"

#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "cntkio/errors.hpp"
#include "core/logger.hpp"
#include "pipeline/checkpoint_state.hpp"
#include "pipeline/epoch_book.hpp"
#include "pipeline/read_ahead.hpp"

namespace cntkio::pipeline {
namespace {
class ComposedSource final : public MinibatchSource {
 public:
  ComposedSource(std::shared_ptr<pipeline::SequenceEnumerator> enumerator,
                 std::unique_ptr<pipeline::Packer> packer, size_t truncation_length,
                 const ReaderSettings& settings)
      : enumerator_(std::move(enumerator)),
        packer_(std::move(packer)),
        book_(truncation_length),
        logger_(settings.trace_level),
        read_ahead_([this] { return read_one(); }, settings.prefetch) {
    if (std::optional<TransformDraws> draws = enumerator_->state().transform_draws) {
      random_transforms_ = true;
      epoch_start_draws_[0] = std::move(*draws);
    }
  }

  ~ComposedSource() override { read_ahead_.discard(); }

  const std::vector<StreamInfo>& streams() const override { return enumerator_->streams(); }

  void start_epoch(size_t minibatch_size, size_t epoch_index, size_t epoch_size, size_t worker_rank,
                   size_t num_workers) override {
    const EpochConfiguration config =
        book_.v1_epoch(minibatch_size, epoch_index, epoch_size, worker_rank, num_workers);
    read_ahead_.discard();
    // Random transforms: epoch k starts with the engines where an uninterrupted run has them after epochs
    // 0..k-1. Engines elsewhere (a fresh reader, epochs skipped or cut short, an earlier epoch again) are
    // positioned before the first read (position_engines), unless a restore positions them first.
    replay_for_epoch_.reset();
    if (random_transforms_) {
      auto known = epoch_start_draws_.find(epoch_index);
      if (known == epoch_start_draws_.end() || !same_draws(current_draws(), known->second)) {
        replay_for_epoch_ = epoch_index;
      }
      epoch_draws_exact_ = true;
    }
    {
      ReadAhead::Hold hold = read_ahead_.hold(replay_for_epoch_.has_value());
      begin_then_restore(config);
    }
    book_.mark_v1();
    apply_pending_restore();
  }

  size_t sweep_size() override {
    // As the base class, but without starting to read ahead: the caller reconfigures the reader next (the
    // read-ahead of this epoch would load the whole first randomization window for nothing).
    {
      ReadAhead::Hold hold = read_ahead_.hold();
      start_epoch(1, 1, kFullSweep, 0, 1);
    }
    return current_sample_position();
  }

  bool next_minibatch(Minibatch& out) override {
    position_engines();
    while (!book_.epoch_over()) {
      ReadResult r = read_ahead_.next();
      if (r.minibatch.end_of_epoch) {
        book_.end_epoch();
        // The draws after a whole v1 epoch read from its start are where the next epoch starts.
        if (book_.v1() && epoch_draws_exact_ && r.after.transform_draws) {
          epoch_start_draws_[book_.config().epoch_index + 1] = *r.after.transform_draws;
        }
      }
      checkpoint_.record(std::move(r.after), std::move(r.packer_after));
      // CNTK's shim also ends the epoch on an empty minibatch in mid-epoch (possible for one worker of
      // many); that drops the rest of the epoch for this worker, so we keep reading instead.
      if (r.minibatch.empty()) continue;
      std::swap(out, r.minibatch);
      packer_->recycle(std::move(r.minibatch));  // the caller's previous minibatch: its buffers are reused
      schedule();
      return true;
    }
    return false;
  }

  size_t current_sample_position() const override { return checkpoint_.position(); }

  SkipReport skip_report() const override { return skips_.report(); }
  std::vector<std::string> describe() const override {
    return describe_ ? describe_() : std::vector<std::string>{};
  }
  void set_description(std::function<std::vector<std::string>()> describe) {
    describe_ = std::move(describe);
  }
  void set_skip_sources(pipeline::SkipSources skips) {
    skips_ = std::move(skips);
    packer_->set_input_check(skips_.input_check());
  }

  bool defer_values(bool on) override { return packer_->defer_values(on); }

  std::vector<std::shared_ptr<const void>> shared_indexes() const override {
    std::vector<std::shared_ptr<const void>> out;
    for (const auto& d : skips_.deserializers) {
      if (auto index = d->shared_index()) out.push_back(std::move(index));
    }
    return out;
  }

  void set_v2_limits(size_t max_samples, size_t max_sweeps) override {
    book_.set_v2_limits(max_samples, max_sweeps);
  }

  bool next_minibatch_v2(size_t minibatch_size, size_t num_partitions, size_t partition_index,
                         Minibatch& out) override {
    EpochBook::check_v2_request(minibatch_size, num_partitions, partition_index);
    if (book_.v2_start_due()) {
      read_ahead_.discard();
      const EpochConfiguration config = book_.v2_epoch(minibatch_size, num_partitions, partition_index);
      replay_for_epoch_.reset();
      epoch_draws_exact_ = false;
      begin_then_restore(config);
      book_.mark_v2_reading();
      apply_pending_restore();
    } else if (book_.v2_split_changes(minibatch_size, num_partitions, partition_index)) {
      read_ahead_.discard();
      checkpoint_.resplit(book_.resplit_v2(minibatch_size, num_partitions, partition_index));
    }
    return next_minibatch(out);
  }

  ReaderState state() const override {
    // The draws of an epoch start still to be positioned are known only once they are positioned. (Objects
    // of this class are never const: from_config creates them.)
    if (replay_for_epoch_) const_cast<ComposedSource*>(this)->position_engines();
    return checkpoint_.reader_state(book_.config());
  }

  void restore(const ReaderState& state) override {
    if (book_.restore_waits()) {
      checkpoint_.defer(state);  // applied when reading starts (start_epoch or the first v2 read)
      return;
    }
    if (state.transform_draws && !state.transform_draws->empty() && !random_transforms_) {
      throw UsageError(
          "The reader state records random transform draws, but this reader has no random "
          "transforms (a state of another reader?).");
    }
    read_ahead_.discard();
    // The state positions the engines (or, without recorded draws, puts them back at their seeds).
    replay_for_epoch_.reset();
    epoch_draws_exact_ = state.transform_draws.has_value() && state.worker_positions.empty();
    checkpoint_.restore(state, book_.config());
    book_.open();
    schedule();
  }

 private:
  using TransformDraws = std::vector<std::vector<uint64_t>>;

  TransformDraws current_draws() const {
    return enumerator_->state().transform_draws.value_or(TransformDraws{});
  }

  // Equal draws, an engine missing from one side counting as one that has not drawn.
  static bool same_draws(const TransformDraws& a, const TransformDraws& b) {
    if (a.size() != b.size()) return false;
    for (size_t t = 0; t < a.size(); ++t) {
      const size_t n = std::max(a[t].size(), b[t].size());
      for (size_t j = 0; j < n; ++j) {
        if ((j < a[t].size() ? a[t][j] : 0) != (j < b[t].size() ? b[t][j] : 0)) return false;
      }
    }
    return true;
  }

  // Puts the random engines where an uninterrupted run has them at the start of epoch replay_for_epoch_:
  // from the latest epoch start known at or before it, the epochs in between are read again with this
  // epoch's settings and discarded. Then starts the epoch (and its read-ahead).
  void position_engines() {
    if (!replay_for_epoch_) return;
    const size_t target = *replay_for_epoch_;
    replay_for_epoch_.reset();
    auto known = std::prev(epoch_start_draws_.upper_bound(target));  // epoch 0 is always known
    const size_t from = known->first;
    enumerator_->reposition_transforms(known->second);
    if (from < target) {
      logger_.log(
          core::LogLevel::kWarning,
          "WARNING: epoch " + std::to_string(target) +
              " has random image transforms, and this reader's random generators are not where an "
              "uninterrupted run has them at its start (a new reader, or epochs skipped or cut short): "
              "reading epochs " +
              std::to_string(from) + " to " + std::to_string(target - 1) +
              " again and discarding them to get there. This is slow; restoring a checkpoint taken in "
              "that run avoids it.");
    }
    EpochConfiguration replay = book_.config();
    for (size_t epoch = from; epoch < target; ++epoch) {
      replay.epoch_index = epoch;
      enumerator_->start_epoch(replay);
      enumerator_->skip_delivered({});
      packer_->set_configuration(replay);
      while (!packer_->read_minibatch().end_of_epoch) {
      }
      epoch_start_draws_[epoch + 1] = current_draws();
    }
    if (from < target) {
      begin(book_.config());  // epoch `target` from its start, with its read-ahead
    } else {
      checkpoint_.record_enumerator();
      schedule();
    }
  }

  void apply_pending_restore() {
    if (std::optional<ReaderState> restored = checkpoint_.take_pending()) restore(*restored);
  }

  // begin(), but with a restore to come (apply_pending_restore, which starts reading ahead itself) nothing is
  // read ahead from the epoch's start: that would load the start's whole randomization window, and the
  // restore would then wait for it and drop it.
  void begin_then_restore(const EpochConfiguration& config) {
    ReadAhead::Hold hold = read_ahead_.hold(checkpoint_.restore_pending());
    begin(config);
  }

  void begin(const EpochConfiguration& config) {
    book_.configure(config);
    checkpoint_.begin(config);
    book_.open();
    schedule();
  }

  ReadResult read_one() {
    ReadResult r;
    try {
      r.minibatch = packer_->read_minibatch();
    } catch (const Error&) {
      skips_.check_inputs_intact();  // zeros read past the new end of a cut file are no format error
      throw;
    }
    // Values copied from a mapped file that was cut meanwhile are zeros it never held. (Deferred values are
    // checked by whoever copies them.)
    if (!r.minibatch.deferred_values) skips_.check_inputs_intact();
    r.after = enumerator_->state();
    r.packer_after = packer_->state();
    return r;
  }

  // The packer and enumerator are only ever used by one thread at a time: read_ahead_ waits for its batch
  // before the caller touches them.
  void schedule() {
    if (!book_.epoch_over()) read_ahead_.schedule();
  }

  std::shared_ptr<pipeline::SequenceEnumerator> enumerator_;
  std::unique_ptr<pipeline::Packer> packer_;
  EpochBook book_;
  CheckpointState checkpoint_{*enumerator_, *packer_};
  pipeline::SkipSources skips_;
  std::function<std::vector<std::string>()> describe_;
  core::Logger logger_;
  bool random_transforms_ = false;  // a transform draws random numbers: the rest is about their engines
  std::map<size_t, TransformDraws> epoch_start_draws_;  // v1: the draws at the start of epoch k
  std::optional<size_t> replay_for_epoch_;  // start_epoch(k) found the engines elsewhere than k's start
  bool epoch_draws_exact_ = false;          // this v1 epoch began with the engines of an uninterrupted run
  ReadAhead read_ahead_;                    // last: it stops reading before the rest goes
};

}  // namespace

std::unique_ptr<MinibatchSource> make_composed_source(SourceParts parts) {
  auto source = std::make_unique<ComposedSource>(std::move(parts.enumerator), std::move(parts.packer),
                                                 parts.truncation_length, parts.settings);
  source->set_skip_sources(std::move(parts.skips));
  source->set_description(std::move(parts.describe));
  return source;
}

}  // namespace cntkio::pipeline
