#include "pipeline/read_ahead.hpp"

#include <utility>

namespace cntkio::pipeline {

namespace {

// Apart from next(), whose other returns keep GCC 12 from eliding this copy (and make it warn falsely that
// the state's optional draws may be read uninitialized).
ReadResult take_front(std::deque<ReadResult>& ready) {
  ReadResult r = std::move(ready.front());
  ready.pop_front();
  return r;
}

}  // namespace

size_t minibatch_data_bytes(const Minibatch& minibatch) {
  size_t bytes = 0;
  for (const StreamBatch& s : minibatch.streams) {
    bytes += s.values.size() + (s.row_indices.size() + s.col_starts.size()) * sizeof(int32_t);
  }
  if (minibatch.deferred_values) {
    bytes += static_cast<const DeferredValues*>(minibatch.deferred_values.get())->bytes;
  }
  return bytes;
}

ReadAhead::ReadAhead(ReadFunction read, bool enabled, ReadAheadLimits limits)
    : read_(std::move(read)), enabled_(enabled), limits_(limits) {}

ReadAhead::~ReadAhead() {
  discard();
}

void ReadAhead::schedule() {
  if (!enabled_ || holds_ > 0 || produced_epoch_end_ || failure_ || pending_.valid()) return;
  const size_t max_batch = from_new_position_ ? 1 : limits_.max_batch;
  from_new_position_ = false;
  pending_ = thread_.submit([this, max_batch] { return read_batch(max_batch); });
}

ReadResult ReadAhead::next() {
  if (ready_.empty() && pending_.valid()) {
    std::future<Batch> f = std::move(pending_);
    {
      const StageTimer timer(wait_counter_);
      f.wait();
    }
    Batch batch = f.get();
    for (ReadResult& r : batch.results) ready_.push_back(std::move(r));
    failure_ = batch.failure;
    produced_epoch_end_ = batch.epoch_end;
    schedule();  // the next batch is read while the caller takes these
  }
  if (!ready_.empty()) return take_front(ready_);
  if (failure_) {
    std::exception_ptr failure = failure_;
    failure_ = nullptr;
    std::rethrow_exception(failure);
  }
  return read_();
}

void ReadAhead::discard() {
  if (pending_.valid()) pending_.wait();
  pending_ = {};
  ready_.clear();
  failure_ = nullptr;
  produced_epoch_end_ = false;
  from_new_position_ = true;
}

ReadAhead::Batch ReadAhead::read_batch(size_t max_batch) {
  Batch batch;
  const auto start = std::chrono::steady_clock::now();
  size_t bytes = 0;
  size_t last_bytes = 0;  // of the last minibatch read
  try {
    do {
      // Small minibatches go many to a group (as many as the batch's bytes allow), for the group's threads
      // to have more to share than it costs to wake them; large ones a few (group_size_, kGroupBytes).
      size_t group = 1;
      if (read_group_) {
        group = group_size_;
        if (last_bytes > 0) {
          group = std::max(group, limits_.batch_bytes / last_bytes);
          group = std::min(group, std::max<size_t>(1, kGroupBytes / last_bytes));
        }
        group = std::min(group, max_batch - batch.results.size());
      }
      if (group <= 1) {
        batch.results.push_back(read_());
        if (batch.results.back().minibatch.end_of_epoch) {
          batch.epoch_end = true;
          break;
        }
        last_bytes = minibatch_data_bytes(batch.results.back().minibatch);
        bytes += last_bytes;
        continue;
      }
      Group read = read_group_(group);
      for (ReadResult& r : read.results) {
        batch.epoch_end = batch.epoch_end || r.minibatch.end_of_epoch;
        last_bytes = minibatch_data_bytes(r.minibatch);
        bytes += last_bytes;
        batch.results.push_back(std::move(r));
      }
      if (read.failure) {
        batch.failure = read.failure;
        break;
      }
      if (batch.epoch_end) break;
    } while (batch.results.size() < max_batch && bytes < limits_.batch_bytes &&
             std::chrono::steady_clock::now() - start < limits_.batch_time);
  } catch (...) {
    batch.failure = std::current_exception();
  }
  return batch;
}

}  // namespace cntkio::pipeline
