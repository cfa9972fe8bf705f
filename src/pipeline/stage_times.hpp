// Where a reader's time goes (MinibatchSource::stats, `cntkio bench`): each stage adds the steady-clock time
// it ran to a counter. Two clock reads per chunk load and per minibatch: nothing a minibatch notices.
//
// Thread-safety: the counters are atomic; chunk loads add to them from the loader threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "cntkio/minibatch_source.hpp"
#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline {

struct StageTimes {
  std::atomic<uint64_t> index_ns{0};        // MinibatchSource::create
  std::atomic<uint64_t> load_ns{0};         // chunk loads, on every thread
  std::atomic<uint64_t> reader_load_ns{0};  // of those, the loads on the reading thread (no loader threads)
  std::atomic<uint64_t> chunk_wait_ns{0};   // the reading thread waiting for a chunk load in flight
  std::atomic<uint64_t> enumerate_ns{0};    // the packer waiting for its enumerator's next sequences
  std::atomic<uint64_t> read_ns{0};         // reading whole minibatches (enumerator and packer)
  std::atomic<uint64_t> minibatch_wait_ns{0};  // the caller waiting for minibatches read ahead

  /// The stage times of SourceStats, each stage without the stages it waited for.
  void fill(SourceStats& stats) const;
};

/// Adds the time from its construction to its destruction to `counter` (nothing when null).
class StageTimer {
 public:
  explicit StageTimer(std::atomic<uint64_t>* counter)
      : counter_(counter),
        start_(counter ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{}) {}
  ~StageTimer() {
    if (counter_ == nullptr) return;
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_);
    counter_->fetch_add(static_cast<uint64_t>(ns.count()), std::memory_order_relaxed);
  }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  std::atomic<uint64_t>* counter_;
  std::chrono::steady_clock::time_point start_;
};

/// `inner`, with the time its get_next_sequences takes added to `times->enumerate_ns`.
std::shared_ptr<SequenceEnumerator> with_timing(std::shared_ptr<SequenceEnumerator> inner,
                                                std::shared_ptr<StageTimes> times);

}  // namespace cntkio::pipeline
