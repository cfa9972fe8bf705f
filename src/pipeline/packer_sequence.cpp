// SequencePacker and FramePacker: one enumerator call per minibatch, each stream laid out on its own.
#include <atomic>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "pipeline/packer.hpp"
#include "pipeline/packer_common.hpp"

namespace cntkio::pipeline {

namespace {

using packer_detail::location;

class SequencePacker : public Packer {
 public:
  SequencePacker(std::shared_ptr<SequenceEnumerator> source, bool local_timeline, bool frame_mode)
      : source_(std::move(source)), local_timeline_(local_timeline), frame_mode_(frame_mode) {
    if (!source_) throw UsageError("A packer needs a sequence enumerator.");
    packer_detail::check_stream_names(source_->streams());
    plans_ = source_->defer_fetch(true);
  }

  void set_configuration(const EpochConfiguration& config) override {
    packer_detail::check_configuration(config);
    const size_t mb = config.minibatch_size_in_samples;
    if (local_timeline_) {
      local_budget_ = local_minibatch_size(mb, config.num_workers, config.worker_rank);
      global_budget_ = std::numeric_limits<size_t>::max();
    } else {
      local_budget_ = global_budget_ = mb;
    }
  }

  Minibatch read_minibatch() override {
    if (plans_) {
      PlannedMinibatch planned = plan();
      fill(planned);
      return finish(planned);
    }
    if (local_budget_ == 0) throw UsageError("read_minibatch() called before set_configuration().");
    Sequences sequences = source_->get_next_sequences(global_budget_, local_budget_);
    try {
      return pack(sequences);
    } catch (const FormatError& e) {
      throw_located(e, sequences);
      throw;
    }
  }

  bool plans() const override { return plans_; }

  PlannedMinibatch plan() override {
    if (local_budget_ == 0) throw UsageError("read_minibatch() called before set_configuration().");
    PlannedMinibatch planned;
    planned.sequences = source_->get_next_sequences(global_budget_, local_budget_);
    return planned;
  }

  void fill(PlannedMinibatch& planned) override {
    try {
      source_->fetch(planned.sequences);
    } catch (...) {
      planned.fetch_failure = std::current_exception();
      return;
    }
    try {
      planned.minibatch = pack(planned.sequences);
    } catch (...) {
      planned.pack_failure = std::current_exception();
    }
  }

  Minibatch finish(PlannedMinibatch& planned) override {
    // In the order read_minibatch() meets them: the fetch's failure, too many invalid sequences, the pack's.
    if (planned.fetch_failure) std::rethrow_exception(planned.fetch_failure);
    source_->count_invalid(planned.sequences);
    if (planned.pack_failure) {
      try {
        std::rethrow_exception(planned.pack_failure);
      } catch (const FormatError& e) {
        throw_located(e, planned.sequences);
        throw;
      }
    }
    Minibatch packed = std::move(planned.minibatch);
    source_->recycle(std::move(planned.sequences));
    return packed;
  }

 private:
  // The checks know a sequence by its key only: throws `error` with the file and line it came from, where
  // the enumerator knows them.
  void throw_located(const FormatError& error, const Sequences& sequences) const {
    if (std::optional<FormatError> located = packer_detail::with_origin(error, sequences, *source_)) {
      throw *located;
    }
  }

  Minibatch pack(Sequences& sequences) {
    Minibatch result;
    result.end_of_sweep = sequences.end_of_sweep;
    result.end_of_epoch = sequences.end_of_epoch;
    if (sequences.num_sequences() == 0) return result;
    const bool defer = defer_.load(std::memory_order_relaxed);
    if (!defer) take_spare(result);
    const auto& streams = source_->streams();
    if (!defer) packer_detail::prefetch_sequences(sequences, streams);

    packer_detail::check_shape(sequences, streams.size());
    result.keys.reserve(sequences.num_sequences());
    for (const SequenceKey& key : sequences.keys) result.keys.push_back(source_->key_to_string(key));

    result.streams.resize(streams.size());
    size_t deferred_bytes = 0;
    thread_local std::vector<size_t> lengths;  // pack() runs on several threads at once (fill)
    lengths.resize(sequences.num_sequences());
    for (size_t i = 0; i < streams.size(); ++i) {
      const StreamInfo& stream = streams[i];
      const auto& data = sequences.data[i];
      for (size_t j = 0; j < data.size(); ++j) {
        lengths[j] = data[j].number_of_samples;
        if (lengths[j] == 0) {
          throw FormatError("Sequences must be at least one frame long.", location(stream, result.keys[j]));
        }
        if (frame_mode_ && lengths[j] > 1) {
          throw FormatError(
              "Detected a non-frame sequence of size " + std::to_string(lengths[j]) + " in frame mode.",
              location(stream, result.keys[j]));
        }
      }
      StreamBatch& out = result.streams[i];
      out.info = stream;
      if (frame_mode_) {
        make_frame_layout_into(data.size(), out.layout);
      } else {
        make_packed_layout_into(lengths, out.layout);
      }
      if (stream.storage == StorageFormat::kDense) {
        out.info.sample_shape = packer_detail::batch_sample_shape(stream, data, result.keys);
        if (defer) {
          deferred_bytes +=
              out.layout.num_columns() * out.info.sample_dim() * element_size(stream.element_type);
          continue;
        }
        packer_detail::pack_dense(out.info, out.layout, data, out.values);
        out.row_indices.clear();
        out.col_starts.clear();
      } else if (defer) {
        for (const SequenceData& seq : data) {
          deferred_bytes += seq.total_nnz * (element_size(stream.element_type) + sizeof(int32_t));
        }
      } else {
        packer_detail::pack_sparse(stream, out.layout, data, result.keys, out);
      }
    }
    if (defer) {
      auto deferred = std::make_shared<DeferredValues>();
      deferred->sequences = std::move(sequences);
      deferred->bytes = deferred_bytes;
      deferred->check_inputs = input_check_;
      result.deferred_values = std::move(deferred);
    }
    return result;
  }

 public:
  bool defer_values(bool on) override {
    defer_.store(on, std::memory_order_relaxed);
    return true;
  }

  void recycle(Minibatch&& used) override {
    used.deferred_values.reset();  // a spare keeps buffers, not chunks
    size_t bytes = 0;
    for (const StreamBatch& s : used.streams) {
      bytes += s.values.capacity() + (s.row_indices.capacity() + s.col_starts.capacity()) * sizeof(int32_t);
    }
    std::lock_guard<std::mutex> lock(spare_mutex_);
    const bool fits =
        spare_bytes_ + bytes <= kMaxSpareBytes || (spare_.empty() && bytes <= kMaxLoneSpareBytes);
    if (!fits) return;  // dropped (freed) instead
    spare_bytes_ += bytes;
    spare_.emplace_back(std::move(used), bytes);
  }

 private:
  // Buffers of minibatches handed back: written over in place, they need no allocation and no page faults,
  // and dense values are written once instead of zeroed first (pack_dense). A spare is held a little longer
  // than a freed minibatch would have been, so the spares are capped at what one read-ahead batch holds
  // (many small minibatches), or one minibatch of up to 1 MiB; larger ones are freed as before.
  static constexpr size_t kMaxSpareBytes = 256 << 10;
  static constexpr size_t kMaxLoneSpareBytes = 1 << 20;

  void take_spare(Minibatch& result) {
    std::lock_guard<std::mutex> lock(spare_mutex_);
    if (spare_.empty()) return;
    result.streams = std::move(spare_.back().first.streams);
    result.keys = std::move(spare_.back().first.keys);
    result.keys.clear();
    spare_bytes_ -= spare_.back().second;
    spare_.pop_back();
  }

  std::atomic<bool> defer_{false};
  std::mutex spare_mutex_;
  std::vector<std::pair<Minibatch, size_t>> spare_;  // (minibatch, bytes of its buffers)
  size_t spare_bytes_ = 0;
  std::shared_ptr<SequenceEnumerator> source_;
  bool local_timeline_;
  bool frame_mode_;
  bool plans_ = false;  // the enumerator defers fetching: plan(), fill(), finish()
  size_t global_budget_ = 0;
  size_t local_budget_ = 0;  // 0 until configured
};

}  // namespace

std::unique_ptr<Packer> make_sequence_packer(std::shared_ptr<SequenceEnumerator> source,
                                             bool local_timeline) {
  return std::make_unique<SequencePacker>(std::move(source), local_timeline, false);
}

std::unique_ptr<Packer> make_frame_packer(std::shared_ptr<SequenceEnumerator> source, bool local_timeline) {
  return std::make_unique<SequencePacker>(std::move(source), local_timeline, true);
}

}  // namespace cntkio::pipeline
