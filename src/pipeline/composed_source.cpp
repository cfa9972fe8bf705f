// ComposedSource: the MinibatchSource that drives a packer over an enumerator (randomizer, transforms). A
// façade: EpochBook keeps CNTK's v1 epochs and v2 limits, ReadAhead reads ahead on a thread of its own,
// CheckpointState keeps the state to return (truncated BPTT's slots included), TransformReplay positions the
// random transforms' engines at epoch starts, and SkipSources reports skips and checks the inputs. This
// class keeps the MinibatchSource interface and the order in which it calls them. MinibatchSource::create
// assembles one.
#include "pipeline/composed_source.hpp"

#include <atomic>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include "cntkio/errors.hpp"
#include "pipeline/checkpoint_state.hpp"
#include "pipeline/epoch_book.hpp"
#include "pipeline/read_ahead.hpp"
#include "pipeline/transform_replay.hpp"

namespace cntkio::pipeline {
namespace {

class ComposedSource final : public MinibatchSource {
 public:
  explicit ComposedSource(SourceParts parts)
      : enumerator_(std::move(parts.enumerator)),
        packer_(std::move(parts.packer)),
        skips_(std::move(parts.skips)),
        book_(parts.truncation_length),
        checkpoint_(*enumerator_, *packer_),
        replay_(enumerator_->state().transform_draws, parts.settings.trace_level),
        describe_(std::move(parts.describe)),
        partition_chunks_(parts.partition_chunks),
        times_(std::move(parts.times)),
        more_stats_(std::move(parts.more_stats)),
        pool_(std::move(parts.pool)),
        read_ahead_([this] { return read_one(); }, parts.settings.prefetch) {
    packer_->set_input_check(skips_.input_check());
    if (times_) read_ahead_.set_wait_counter(&times_->minibatch_wait_ns);
    if (packer_->plans() && pool_ && pool_->size() > 0) {
      read_ahead_.set_group_reader([this](size_t n) { return read_group(n); }, pool_->size() + 1);
    }
  }

  ~ComposedSource() override { read_ahead_.discard(); }

  const std::vector<StreamInfo>& streams() const override { return enumerator_->streams(); }

  void start_epoch(size_t minibatch_size, size_t epoch_index, size_t epoch_size, size_t worker_rank,
                   size_t num_workers) override {
    const EpochConfiguration config =
        book_.v1_epoch(minibatch_size, epoch_index, epoch_size, worker_rank, num_workers);
    read_ahead_.discard();
    // Engines that are not where this epoch starts them are positioned before the first read
    // (position_engines), unless a restore positions them first.
    replay_.start_v1_epoch(epoch_index, *enumerator_);
    {
      ReadAhead::Hold hold = read_ahead_.hold(replay_.replay_due());
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
        replay_.epoch_ended(book_.config().epoch_index, book_.v1(), r.after.transform_draws);
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

  size_t current_sample_position() const override {
    return checkpoint_.pending() ? checkpoint_.pending()->position : checkpoint_.position();
  }

  SkipReport skip_report() const override { return skips_.report(); }
  std::vector<std::string> describe() const override {
    return describe_ ? describe_() : std::vector<std::string>{};
  }
  size_t partition_chunks() const override { return partition_chunks_; }

  bool defer_values(bool on) override {
    const bool deferred = packer_->defer_values(on);
    if (deferred) values_deferred_.store(on, std::memory_order_relaxed);
    return deferred;
  }

  SourceStats stats() const override {
    SourceStats stats;
    if (times_) times_->fill(stats);
    if (more_stats_) more_stats_(stats);
    return stats;
  }

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
      replay_.start_v2();
      begin_then_restore(config);
      book_.mark_v2_reading();
      apply_pending_restore();
    } else if (book_.v2_split_changes(minibatch_size, num_partitions, partition_index)) {
      read_ahead_.discard();
      const bool same_workers =
          num_partitions == book_.config().num_workers && partition_index == book_.config().worker_rank;
      checkpoint_.resplit(book_.resplit_v2(minibatch_size, num_partitions, partition_index), same_workers);
    }
    return next_minibatch(out);
  }

  ReaderState state() const override {
    // A restore not applied yet (nothing read since) is where the reader stands: a checkpoint taken now must
    // continue from there, not from the start.
    if (checkpoint_.pending()) return *checkpoint_.pending();
    // The draws of an epoch start still to be positioned are known only once they are positioned. (Objects
    // of this class are never const: make_composed_source creates them.)
    if (replay_.replay_due()) const_cast<ComposedSource*>(this)->position_engines();
    return checkpoint_.reader_state(book_.config());
  }

  void restore(const ReaderState& given) override {
    if (book_.restore_waits()) {
      checkpoint_.defer(given);  // applied when reading starts (start_epoch or the first v2 read)
      return;
    }
    const ReaderState& state =
        state_for_worker(given, book_.config().num_workers, book_.config().worker_rank);
    replay_.check_restorable(state);
    read_ahead_.discard();
    // The state positions the engines (or, without recorded draws, puts them back at their seeds).
    replay_.restored(state);
    checkpoint_.restore(state, book_.config());
    book_.open();
    schedule();
  }

 private:
  // Puts the random engines where an uninterrupted run has them at the start of the epoch, if they are not,
  // then starts the epoch's read-ahead.
  void position_engines() {
    if (!replay_.replay_due()) return;
    if (replay_.position_engines(*enumerator_, *packer_, book_.config())) {
      begin(book_.config());  // the epoch from its start again, with its read-ahead
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

  // ReadAhead's read function.
  ReadResult read_one() {
    ReadResult r;
    try {
      const StageTimer timer(times_ ? &times_->read_ns : nullptr);
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

  static constexpr size_t kSequencesToShare = 256;

  // ReadAhead's group reader: read_one() `max_count` times, with the fetching and packing of the minibatches
  // shared by this thread and the loader threads (those busy loading chunks join when they are done). What
  // it gives, and where it leaves the enumerator, is what as many read_one() calls would have.
  ReadAhead::Group read_group(size_t max_count) {
    ReadAhead::Group group;
    const StageTimer timer(times_ ? &times_->read_ns : nullptr);
    std::vector<PlannedMinibatch> planned;
    std::vector<EnumeratorState> after;
    std::vector<PackerState> packer_after;
    std::exception_ptr plan_failure;
    planned.reserve(max_count);
    while (planned.size() < max_count) {
      try {
        planned.push_back(packer_->plan());
      } catch (...) {
        plan_failure = checked_inputs(std::current_exception());
        break;
      }
      after.push_back(enumerator_->state());
      packer_after.push_back(packer_->state());
      if (planned.back().sequences.end_of_epoch) break;
    }
    // Waking the loader threads costs tens of microseconds: a group with little to fetch is filled here.
    size_t sequences = 0;
    for (const PlannedMinibatch& p : planned) sequences += p.sequences.num_sequences();
    const bool share = sequences >= kSequencesToShare && !values_deferred_.load(std::memory_order_relaxed);
    const size_t helpers = share ? pool_->size() : 0;
    core::run_parts(pool_.get(), helpers, planned.size(), [&](size_t k) { packer_->fill(planned[k]); });
    // Every minibatch of the group is filled before the first is finished: one check of the inputs, at the
    // first minibatch that copied values, covers them all (a file cut after it cut nothing they read; each
    // was checked on its own before, a system call per file and minibatch on the read-ahead thread).
    bool inputs_checked = false;
    for (size_t k = 0; k < planned.size(); ++k) {
      ReadResult r;
      try {
        try {
          r.minibatch = packer_->finish(planned[k]);
        } catch (...) {
          std::rethrow_exception(checked_inputs(std::current_exception()));
        }
        if (!r.minibatch.deferred_values && !inputs_checked) {
          skips_.check_inputs_intact();
          inputs_checked = true;
        }
      } catch (...) {
        group.failure = std::current_exception();
        // Reading on starts where it would after this minibatch's read alone: after its sequences.
        if (k + 1 < planned.size() || plan_failure) enumerator_->restore(after[k]);
        return group;
      }
      r.after = std::move(after[k]);
      r.packer_after = std::move(packer_after[k]);
      group.results.push_back(std::move(r));
    }
    group.failure = plan_failure;
    return group;
  }

  // `failure` as read_one() lets it go: an Error after the inputs were checked (zeros read past the new end
  // of a cut file are no format error: the check's IoError replaces it).
  std::exception_ptr checked_inputs(std::exception_ptr failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const Error&) {
      try {
        skips_.check_inputs_intact();
      } catch (...) {
        return std::current_exception();
      }
    } catch (...) {
    }
    return failure;
  }

  // The packer and enumerator are only ever used by one thread at a time: read_ahead_ waits for its batch
  // before the caller touches them.
  void schedule() {
    if (!book_.epoch_over()) read_ahead_.schedule();
  }

  std::shared_ptr<SequenceEnumerator> enumerator_;
  std::unique_ptr<Packer> packer_;
  SkipSources skips_;
  EpochBook book_;
  CheckpointState checkpoint_;
  TransformReplay replay_;
  std::function<std::vector<std::string>()> describe_;
  size_t partition_chunks_;
  std::shared_ptr<StageTimes> times_;
  std::function<void(SourceStats&)> more_stats_;
  std::shared_ptr<core::ThreadPool> pool_;
  std::atomic<bool> values_deferred_{false};
  ReadAhead read_ahead_;  // last: it stops reading before the rest goes
};

}  // namespace

std::unique_ptr<MinibatchSource> make_composed_source(SourceParts parts) {
  return std::make_unique<ComposedSource>(std::move(parts));
}

}  // namespace cntkio::pipeline
