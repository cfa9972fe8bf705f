// TruncatedBPTTPacker: n_r parallel slots, each a queue of whole sequences emitted T samples at a time.
#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <utility>

#include "pipeline/packer.hpp"
#include "pipeline/packer_common.hpp"

namespace cntkio::pipeline {

namespace {

using packer_detail::kGapIndex;
using packer_detail::location;

struct SlotSequence {
  std::vector<SequenceData> data;                // one item per stream
  std::vector<std::vector<size_t>> nnz_offsets;  // sparse streams: entry offset of each sample (+ total)
  std::vector<ChunkPtr> chunks;                  // keeps `data` alive
  std::string key;
  size_t length = 0;
  bool end_of_sweep = false;
  size_t pull = 0;  // serial number of the pull that delivered it (checkpoint replay log)
};

struct Slot {
  std::deque<SlotSequence> sequences;
  size_t length = 0;  // samples queued, including those of the front sequence already emitted
  size_t cursor = 0;  // next sample of the front sequence

  size_t available() const { return length - cursor; }
};

// One get_next_sequences call of the packer, kept while any of its sequences is still queued in a slot.
struct PullRecord {
  EnumeratorState before;  // the enumerator's state just before the call
  size_t slot = 0;
  size_t queued = 0;  // of its sequences, how many are still in the slot
};

class TruncatedBpttPacker : public Packer {
 public:
  TruncatedBpttPacker(std::shared_ptr<SequenceEnumerator> source, size_t truncation_length,
                      size_t right_splice, std::vector<size_t> slots_per_epoch)
      : source_(std::move(source)),
        default_truncation_(truncation_length),
        right_splice_(right_splice),
        slots_per_epoch_(std::move(slots_per_epoch)) {
    if (!source_) throw UsageError("A packer needs a sequence enumerator.");
    packer_detail::check_stream_names(source_->streams());
    if (source_->streams().empty()) throw UsageError("The truncated BPTT packer needs at least one stream.");
    // Output is always dense; sparse input is written as dense columns.
    outputs_ = source_->streams();
    for (StreamInfo& s : outputs_) s.storage = StorageFormat::kDense;
  }

  void set_configuration(const EpochConfiguration& config) override {
    packer_detail::check_configuration(config);
    size_t truncation = config.truncation_length != 0 ? config.truncation_length : default_truncation_;
    size_t slots = 0;
    if (truncation == 0 && !slots_per_epoch_.empty()) {
      // CNTK's older form: windows of the minibatch size, in the number of slots the epoch asks for.
      truncation = config.minibatch_size_in_samples;
      slots = slots_per_epoch_[std::min(config.epoch_index, slots_per_epoch_.size() - 1)];
    } else {
      if (truncation == 0) throw UsageError("Truncation size cannot be zero.");
      slots = std::max<size_t>(1, config.minibatch_size_in_samples / truncation);
    }
    if (slots == 0) throw UsageError("A truncated BPTT minibatch needs at least one slot.");
    if (config.num_workers > slots) {
      throw UsageError(
          "Too many workers for minibatch size; please increase minibatch size or decrease number of "
          "workers.");
    }
    // CNTK keeps a right splice only if it fits the truncation length.
    const size_t splice = truncation >= right_splice_ ? right_splice_ : 0;
    if (splice != 0 && splice == truncation) {
      // CNTK would re-emit the same window forever.
      throw UsageError("rightSplice (" + std::to_string(splice) +
                       ") must be less than the truncation length.");
    }
    truncation_ = truncation;
    splice_ = splice;
    slots_.assign(slots / config.num_workers + (config.worker_rank < slots % config.num_workers ? 1 : 0),
                  Slot{});
    pulls_.clear();
    first_pull_serial_ = 0;
  }

  PackerState state() const override {
    PackerState state;
    state.present = true;
    state.replay_from = pulls_.empty() ? source_->state() : pulls_.front().before;
    for (const PullRecord& pull : pulls_) state.pulls.push_back({pull.slot, pull.queued});
    for (const Slot& slot : slots_) state.cursors.push_back(slot.cursor);
    return state;
  }

  bool restore(const PackerState& state) override {
    if (!state.present) return true;
    if (state.cursors.size() != slots_.size()) return false;
    if (truncation_ == 0) throw UsageError("restore() called before set_configuration().");
    for (const PackerState::Pull& pull : state.pulls) {
      if (pull.slot >= slots_.size())
        throw UsageError("Reader state: a truncated-BPTT slot number is out of range.");
      const EnumeratorState before = source_->state();
      Sequences got = source_->get_next_sequences(std::numeric_limits<size_t>::max(), 1);
      if (got.num_sequences() == 0 || got.num_sequences() < pull.queued) {
        throw UsageError(
            "Reader state: the data no longer hold the sequences the checkpoint's truncated-BPTT slots "
            "held.");
      }
      packer_detail::check_shape(got, outputs_.size());
      pulls_.push_back({before, pull.slot, pull.queued});
      const size_t serial = first_pull_serial_ + pulls_.size() - 1;
      for (size_t j = got.num_sequences() - pull.queued; j < got.num_sequences(); ++j) {
        push(slots_[pull.slot], got, j, got.end_of_sweep && j + 1 == got.num_sequences(), serial);
      }
    }
    drop_finished_pulls();
    for (size_t s = 0; s < slots_.size(); ++s) {
      Slot& slot = slots_[s];
      const size_t front_length = slot.sequences.empty() ? 0 : slot.sequences.front().length;
      if (state.cursors[s] != 0 && state.cursors[s] >= front_length) {
        throw UsageError("Reader state: a truncated-BPTT slot cursor is beyond its sequence.");
      }
      slot.cursor = state.cursors[s];
    }
    return true;
  }

  Minibatch read_minibatch() override {
    if (truncation_ == 0) throw UsageError("read_minibatch() called before set_configuration().");
    for (size_t s = 0; s < slots_.size(); ++s) fill(s);

    Minibatch result;
    if (nothing_to_pack()) {
      result.end_of_epoch = true;
      return result;
    }

    const size_t n = slots_.size();
    const size_t T = truncation_;
    result.streams.resize(outputs_.size());
    std::vector<size_t> sample_bytes(outputs_.size());
    for (size_t i = 0; i < outputs_.size(); ++i) {
      result.streams[i].info = outputs_[i];
      sample_bytes[i] = outputs_[i].sample_dim() * element_size(outputs_[i].element_type);
      result.streams[i].values.assign(n * T * sample_bytes[i], 0);
    }

    // All streams of a sequence have the same length, so one layout serves every stream.
    Layout layout;
    layout.num_parallel = n;
    layout.num_time_steps = T;
    std::vector<Layout::Entry> gaps;
    for (size_t s = 0; s < n; ++s) {
      Slot& slot = slots_[s];
      const size_t k = std::min(T, slot.available());
      if (k == 0) {
        gaps.push_back({kGapIndex, s, 0, static_cast<ptrdiff_t>(T), true});
        continue;
      }
      auto add = [&](ptrdiff_t begin, size_t length) {
        layout.entries.push_back(
            {result.keys.size(), s, begin, begin + static_cast<ptrdiff_t>(length), false});
        result.keys.push_back(slot.sequences.front().key);
      };
      add(-static_cast<ptrdiff_t>(slot.cursor), slot.sequences.front().length);
      bool started_new = false;
      for (size_t t = 0; t < k; ++t) {
        if (slot.cursor >= slot.sequences.front().length) {
          result.end_of_sweep |= pop(slot);
          add(static_cast<ptrdiff_t>(t), slot.sequences.front().length);
          started_new = true;
        }
        const size_t column = t * n + s;
        for (size_t i = 0; i < outputs_.size(); ++i) {
          copy_sample(i, slot.sequences.front(), slot.cursor,
                      result.streams[i].values.data() + column * sample_bytes[i]);
        }
        ++slot.cursor;
      }
      // LC-BLSTM: the last splice_ samples of a full window of one sequence come again next time.
      if (splice_ > 0 && !started_new && k >= T) slot.cursor -= splice_;
      if (slot.cursor >= slot.sequences.front().length) result.end_of_sweep |= pop(slot);
      if (k < T) gaps.push_back({kGapIndex, s, static_cast<ptrdiff_t>(k), static_cast<ptrdiff_t>(T), true});
    }
    // Gaps after the sequences, as in every cntkio layout (CNTK interleaves them per slot).
    layout.entries.insert(layout.entries.end(), gaps.begin(), gaps.end());
    for (StreamBatch& out : result.streams) out.layout = layout;

    // Eager: set on the last minibatch that has data.
    result.end_of_epoch = nothing_to_pack();
    return result;
  }

 private:
  bool nothing_to_pack() const {
    return std::all_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.sequences.empty(); });
  }

  // Requests one sequence at a time until the slot holds more than T samples or the epoch ends.
  void fill(size_t slot_index) {
    Slot& slot = slots_[slot_index];
    while (truncation_ >= slot.available()) {
      const EnumeratorState before = source_->state();
      Sequences got = source_->get_next_sequences(std::numeric_limits<size_t>::max(), 1);
      if (got.num_sequences() > 0) {
        packer_detail::check_shape(got, outputs_.size());
        pulls_.push_back({before, slot_index, got.num_sequences()});
        const size_t serial = first_pull_serial_ + pulls_.size() - 1;
        for (size_t j = 0; j < got.num_sequences(); ++j) {
          // The sweep flag belongs to the last sequence of the result.
          const bool end_of_sweep = got.end_of_sweep && j + 1 == got.num_sequences();
          push(slot, got, j, end_of_sweep, serial);
        }
      }
      if (got.end_of_epoch) return;
    }
  }

  /// Drops the front sequence of `slot`; returns its end-of-sweep flag.
  bool pop(Slot& slot) {
    const SlotSequence& front = slot.sequences.front();
    const bool flag = front.end_of_sweep;
    --pulls_[front.pull - first_pull_serial_].queued;
    slot.length -= front.length;
    slot.cursor = 0;
    slot.sequences.pop_front();
    drop_finished_pulls();
    return flag;
  }

  // The replay log only needs to reach back to the oldest pull with a sequence still queued.
  void drop_finished_pulls() {
    while (!pulls_.empty() && pulls_.front().queued == 0) {
      pulls_.pop_front();
      ++first_pull_serial_;
    }
  }

  // location() of a sequence with the file and line it came from (only built for an error).
  SourceLocation origin(const StreamInfo& stream, const std::string& key_text, const SequenceKey& key) const {
    SourceLocation where = location(stream, key_text);
    const SourceLocation from = source_->sequence_location(key);
    where.file = from.file;
    where.line = from.line;
    where.column = from.column;
    where.byte_offset = from.byte_offset;
    return where;
  }

  void push(Slot& slot, const Sequences& got, size_t j, bool end_of_sweep, size_t pull_serial) {
    SlotSequence seq;
    seq.pull = pull_serial;
    seq.key = source_->key_to_string(got.keys[j]);
    seq.length = got.data[0][j].number_of_samples;
    seq.end_of_sweep = end_of_sweep;
    seq.chunks = got.chunks;
    seq.data.reserve(outputs_.size());
    seq.nnz_offsets.resize(outputs_.size());
    const auto& inputs = source_->streams();
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const SequenceData& d = got.data[i][j];
      try {
        packer_detail::check_fixed_shape(inputs[i], d, seq.key);
      } catch (const FormatError& e) {
        if (std::optional<FormatError> located = packer_detail::with_origin(e, got, *source_)) throw *located;
        throw;
      }
      if (d.number_of_samples != seq.length) {
        throw FormatError("For BPTT sequences between different input stream should have the same length.",
                          origin(inputs[i], seq.key, got.keys[j]));
      }
      if (inputs[i].storage == StorageFormat::kSparseCsc) {
        auto& offsets = seq.nnz_offsets[i];
        offsets.resize(seq.length + 1, 0);
        for (size_t t = 0; t < seq.length; ++t) offsets[t + 1] = offsets[t] + d.nnz_counts[t];
        if (offsets.back() > d.total_nnz) {
          throw FormatError("The nnz counts of a sparse sequence exceed its number of entries.",
                            origin(inputs[i], seq.key, got.keys[j]));
        }
      }
      seq.data.push_back(d);
    }
    if (seq.length == 0) {
      throw FormatError("Sequences must be at least one frame long.",
                        origin(inputs[0], seq.key, got.keys[j]));
    }
    slot.length += seq.length;
    slot.sequences.push_back(std::move(seq));
  }

  void copy_sample(size_t stream, const SlotSequence& seq, size_t sample, unsigned char* column) const {
    const StreamInfo& input = source_->streams()[stream];
    const SequenceData& d = seq.data[stream];
    if (input.storage == StorageFormat::kDense) {
      const size_t bytes = input.sample_dim() * element_size(input.element_type);
      std::memcpy(column, static_cast<const unsigned char*>(d.values) + sample * bytes, bytes);
    } else {
      const auto& offsets = seq.nnz_offsets[stream];
      packer_detail::write_sparse_sample_as_dense(input, d, offsets[sample],
                                                  offsets[sample + 1] - offsets[sample], column, seq.key);
    }
  }

  std::shared_ptr<SequenceEnumerator> source_;
  std::vector<StreamInfo> outputs_;
  size_t default_truncation_;
  size_t right_splice_;
  std::vector<size_t> slots_per_epoch_;  // the older form's slots (see make_truncated_bptt_packer)
  size_t truncation_ = 0;                // 0 until configured
  size_t splice_ = 0;
  std::vector<Slot> slots_;
  std::deque<PullRecord> pulls_;  // pulls since the oldest one with a sequence still queued
  size_t first_pull_serial_ = 0;  // serial number of pulls_.front()
};

}  // namespace

std::unique_ptr<Packer> make_truncated_bptt_packer(std::shared_ptr<SequenceEnumerator> source,
                                                   size_t truncation_length, size_t right_splice,
                                                   std::vector<size_t> slots_per_epoch) {
  return std::make_unique<TruncatedBpttPacker>(std::move(source), truncation_length, right_splice,
                                               std::move(slots_per_epoch));
}

}  // namespace cntkio::pipeline
