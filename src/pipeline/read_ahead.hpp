// ReadAhead: reads the next minibatches on a thread of its own while the caller works with the last one
// (CNTK's prefetch), and hands them out in order; the read that failed hands out its error after the good
// results read before it.
//
// Handing one minibatch from thread to thread costs two wake-ups (tens of microseconds in a VM), as much as
// packing a small minibatch, so the thread reads a batch in one go: until it has read `batch_bytes` of
// minibatch data, worked `batch_time` or read `max_batch` minibatches, and it stops at the end of the epoch
// or an error. Without a group reader large minibatches thus go one at a time (one ahead, as CNTK's
// prefetch). With one (set_group_reader) a batch reads its minibatches a group at a time, each group fetched
// and packed on several threads at once: small minibatches as many as the batch's bytes allow, large ones one
// per thread, within kGroupBytes. The first batch from a new position (the reader's start, an epoch's, a
// restore) holds one minibatch: the caller waits for it, and the one after it may wait for whole chunks that
// the first did not need (a first minibatch of sequences loaded alone).
//
// Thread-safety: one caller thread. The read function runs on the read-ahead thread while a batch is pending
// and on the caller's when nothing was read ahead; what it touches must be left alone by the caller until
// next() returns or discard() (both wait for the pending batch first).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <vector>

#include "cntkio/minibatch.hpp"
#include "core/thread_pool.hpp"
#include "pipeline/packer.hpp"
#include "pipeline/sequence_enumerator.hpp"
#include "pipeline/stage_times.hpp"

namespace cntkio::pipeline {

/// One minibatch with the enumerator's and packer's states right after it was read.
struct ReadResult {
  Minibatch minibatch;
  EnumeratorState after;
  PackerState packer_after;
};

/// How much one read-ahead batch may hold (see the file comment).
struct ReadAheadLimits {
  size_t max_batch = 64;
  size_t batch_bytes = 256 << 10;
  std::chrono::microseconds batch_time{2000};
};

/// The bytes a minibatch's data take (values, sparse indices, deferred values): what batch_bytes counts.
size_t minibatch_data_bytes(const Minibatch& minibatch);

class ReadAhead {
 public:
  using ReadFunction = std::function<ReadResult()>;
  /// Several minibatches read at once (on several threads): the results read before a failure, and it.
  struct Group {
    std::vector<ReadResult> results;
    std::exception_ptr failure;
  };
  using GroupFunction = std::function<Group(size_t max_count)>;

  /// `read` reads one minibatch. Disabled, next() reads on the caller's thread and nothing runs ahead.
  explicit ReadAhead(ReadFunction read, bool enabled = true, ReadAheadLimits limits = {});
  ~ReadAhead();  ///< waits for the batch being read
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  /// Starts reading the next batch on the thread, unless disabled, held, already reading, or the last batch
  /// ended at an epoch end or a failure.
  void schedule();
  /// The next result: read ahead, or read now when nothing was. Throws the failure of a read ahead once the
  /// results before it are taken. Starts the next batch when it takes one.
  ReadResult next();
  /// Waits for the batch being read and drops everything read ahead (the caller repositions before reading
  /// again).
  void discard();
  /// Batches read their minibatches through `read_group`, up to `group_size` at a time (and, once their
  /// size is known, no more than kGroupBytes of them), instead of one by one; the first minibatch from a new
  /// position is still read alone. Call before reading.
  void set_group_reader(GroupFunction read_group, size_t group_size) {
    read_group_ = std::move(read_group);
    group_size_ = group_size;
  }
  static constexpr size_t kGroupBytes = 16 << 20;
  /// next() adds the time it waits for a batch being read ahead to `counter` (null: none).
  void set_wait_counter(std::atomic<uint64_t>* counter) { wait_counter_ = counter; }

  /// While a Hold made with `on` lives, schedule() starts nothing (reading is about to be repositioned).
  class Hold {
   public:
    Hold(ReadAhead& owner, bool on) : owner_(on ? &owner : nullptr) {
      if (owner_) ++owner_->holds_;
    }
    ~Hold() {
      if (owner_) --owner_->holds_;
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    ReadAhead* owner_;
  };
  Hold hold(bool on = true) { return Hold(*this, on); }

 private:
  struct Batch {
    std::vector<ReadResult> results;
    std::exception_ptr failure;  // thrown by the read after the last result
    bool epoch_end = false;
  };
  Batch read_batch(size_t max_batch);

  ReadFunction read_;
  GroupFunction read_group_;
  size_t group_size_ = 1;
  bool enabled_;
  ReadAheadLimits limits_;
  size_t holds_ = 0;
  core::ThreadPool thread_{1};
  std::future<Batch> pending_;
  std::deque<ReadResult> ready_;  // read ahead, not yet handed out
  std::exception_ptr failure_;    // the read after ready_ failed
  bool produced_epoch_end_ = false;
  bool from_new_position_ = true;  // nothing read since the start or the last discard()
  std::atomic<uint64_t>* wait_counter_ = nullptr;
};

}  // namespace cntkio::pipeline
