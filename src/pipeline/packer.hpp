// Packers: turn the sequences a SequenceEnumerator delivers into minibatches (CNTK's SequencePacker,
// FramePacker and TruncatedBPTTPacker).
//
// - Sequence packer: per stream, sequences are placed first-fit into parallel rows as wide as the longest
//   sequence (make_packed_layout); the rest of each row is a gap.
// - Frame packer: every sequence is one sample; N sequences make an N x 1 layout.
// - Truncated BPTT packer: a fixed number of parallel slots, each a queue of sequences that is emitted
//   `truncation_length` samples at a time; sequences continue across minibatches (negative t_begin).
//
// Dense values are column-major with gap columns zeroed; sparse streams are CSC with columns in time-major
// order (BPTT writes sparse input as dense). Minibatch::keys[i] is the key of the sequence whose layout
// entries have sequence_index i.
//
// Thread-safety: a packer is used by one thread at a time; it calls its enumerator from that thread.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "cntkio/minibatch.hpp"
#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline {

/// What a packer holds between minibatches that the enumerator's position does not capture (truncated BPTT:
/// sequences pulled into slots but not fully emitted). `present` is false for packers that hold nothing.
struct PackerState {
  struct Pull {
    size_t slot = 0;    ///< the slot the pull's sequences went to
    size_t queued = 0;  ///< how many of its sequences (the last ones) are still queued; 0 = all emitted
  };
  bool present = false;
  EnumeratorState replay_from;  ///< the enumerator's state before the first pull with a queued sequence
  std::vector<Pull> pulls;      ///< every pull made since replay_from, in order
  std::vector<size_t> cursors;  ///< per slot: samples of its front sequence already emitted
  friend bool operator==(const PackerState&, const PackerState&) = default;
};

/// A minibatch whose sequences a packer has chosen (Packer::plan) but not yet fetched and packed (fill,
/// finish).
struct PlannedMinibatch {
  Sequences sequences;
  Minibatch minibatch;               ///< fill()'s result
  std::exception_ptr fetch_failure;  ///< fill(): fetching the sequences threw this
  std::exception_ptr pack_failure;   ///< fill(): packing them threw this
};

class Packer {
 public:
  virtual ~Packer() = default;
  /// New epoch or new configuration: forget partially packed state (BPTT slots), remember mb size / workers.
  /// Throws UsageError for a minibatch size of 0 or an invalid worker split.
  virtual void set_configuration(const EpochConfiguration& config) = 0;
  /// Reads the next minibatch from the enumerator. With no data: a Minibatch with no streams, flags set.
  virtual Minibatch read_minibatch() = 0;
  /// Whether plan(), fill() and finish() may be used instead of read_minibatch(), to pack several
  /// minibatches at once on several threads: plan() each in turn, fill() them on any threads at once, then
  /// finish() each in plan order; what they give (minibatches, errors, states) is what read_minibatch()
  /// gives. Packers that cannot (truncated BPTT, or an enumerator that cannot defer fetching) say false.
  virtual bool plans() const { return false; }
  /// The next minibatch's sequences, chosen: what has to happen in order. Throws as read_minibatch() does.
  virtual PlannedMinibatch plan() { throw UsageError("This packer does not plan minibatches."); }
  /// Fetches and packs `planned`: from any thread, for several plans at once. Keeps failures in `planned`.
  virtual void fill(PlannedMinibatch& planned) { (void)planned; }
  /// In plan order: the minibatch of `planned`, or what read_minibatch() would have thrown instead.
  virtual Minibatch finish(PlannedMinibatch& planned) { return std::move(planned.minibatch); }
  /// Enough to rebuild what the packer holds (see PackerState); call between minibatches.
  virtual PackerState state() const { return {}; }
  /// After set_configuration() and with the enumerator restored to `state.replay_from`: pulls the recorded
  /// sequences again into the same slots. Returns false, changing nothing, when `state` does not fit the
  /// current configuration (another number of slots); throws UsageError when the data no longer match it.
  virtual bool restore(const PackerState& state) { return !state.present; }
  /// Hands back a minibatch the caller no longer needs, whose buffers a later read_minibatch may reuse (the
  /// only call that may come from another thread than the packer's). Packers that do not reuse drop it.
  virtual void recycle(Minibatch&& used) { (void)used; }
  /// MinibatchSource::defer_values: later minibatches carry a DeferredValues instead of packed values
  /// (the only other call that may come from another thread). False where unsupported, changing nothing.
  virtual bool defer_values(bool on) {
    (void)on;
    return false;
  }
  /// What checks that the inputs whose bytes were copied are intact (Deserializer::check_inputs_intact): a
  /// minibatch with deferred values carries it, for whoever copies them.
  void set_input_check(std::function<void()> check) { input_check_ = std::move(check); }

 protected:
  std::function<void()> input_check_;
};

/// What a minibatch with deferred values holds (Minibatch::deferred_values): the sequences the packer
/// would have copied, [stream][sequence_index], with the chunks they lie in.
struct DeferredValues {
  Sequences sequences;
  size_t bytes = 0;  ///< what packing the values would have written (for read-ahead budgets)
  /// To call once the values are copied: throws IoError if an input was cut meanwhile (may be empty).
  std::function<void()> check_inputs;
};

/// `local_timeline`: budgets per worker (composite reader / v2) instead of the global minibatch size.
std::unique_ptr<Packer> make_sequence_packer(std::shared_ptr<SequenceEnumerator> source, bool local_timeline);
std::unique_ptr<Packer> make_frame_packer(std::shared_ptr<SequenceEnumerator> source, bool local_timeline);
/// `truncation_length` is used unless the configuration's truncation_length is non-zero.
/// `right_splice` (LC-BLSTM): the last right_splice samples of a full window are emitted again next time.
/// `slots_per_epoch` non-empty: CNTK's older form of truncated BPTT (flat HTK readers with `truncated = true`
/// and no truncationLength): when both truncation lengths are 0, the truncation length is the epoch's
/// minibatch size and the minibatch has slots_per_epoch[epoch index] slots (the last value repeats), split
/// across the workers as usual.
std::unique_ptr<Packer> make_truncated_bptt_packer(std::shared_ptr<SequenceEnumerator> source,
                                                   size_t truncation_length, size_t right_splice = 0,
                                                   std::vector<size_t> slots_per_epoch = {});

/// Per-worker sample budget with a local timeline: mb / W plus one for the first mb mod W ranks, at least 1.
size_t local_minibatch_size(size_t minibatch_size, size_t num_workers, size_t worker_rank);

/// CNTK's MBLayout::InitAsPackedSequences: width = longest length, sequence i goes to the first row with room
/// (else a new row), entries in sequence order, then one gap per row that is not full. Lengths must be >= 1.
Layout make_packed_layout(const std::vector<size_t>& lengths);
/// The same, written into `layout`, whose buffer is reused.
void make_packed_layout_into(const std::vector<size_t>& lengths, Layout& layout);
/// CNTK's MBLayout::InitAsFrameMode: n rows x 1 step, sequence i at row i.
Layout make_frame_layout(size_t n);
/// The same, written into `layout`, whose buffer is reused.
void make_frame_layout_into(size_t n, Layout& layout);

}  // namespace cntkio::pipeline
