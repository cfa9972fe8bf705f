// ChunkLoader: loads a deserializer's chunks on background threads ahead of need, and keeps the chunks a
// randomizer still needs. Which chunks are loaded never changes what is delivered, only when the parsing
// happens; errors of a background load surface when the chunk is asked for. A load (in the background or on
// the caller's thread) runs with the pool as core::ThreadPool::current(), so a deserializer that can split
// one chunk's parse (CTF) uses the workers that are idle at that moment.
//
// Thread-safety: one thread (the randomizer's) calls it; the loads themselves run on the pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "core/thread_pool.hpp"
#include "pipeline/stage_times.hpp"

namespace cntkio::pipeline {

class ChunkLoader {
 public:
  /// `pool` may be null: chunks are then loaded on the caller's thread when asked for. With `times`, loads
  /// and waits for them add to its counters.
  ChunkLoader(std::shared_ptr<Deserializer> deserializer, std::shared_ptr<core::ThreadPool> pool,
              std::shared_ptr<StageTimes> times = nullptr);
  ~ChunkLoader();
  ChunkLoader(const ChunkLoader&) = delete;
  ChunkLoader& operator=(const ChunkLoader&) = delete;

  /// Marks `chunk_id` for loading in the background unless it is loaded or loading (no-op without a pool).
  /// The loads start at the next flush() or get(), in the order they were asked for: a restore right after
  /// a start_epoch thus never loads the start's window.
  void prefetch(uint32_t chunk_id);
  /// Starts the background loads prefetch() asked for.
  void flush();
  /// The chunk, loaded now or awaited; rethrows the error of its load.
  ChunkPtr get(uint32_t chunk_id);
  /// True while `chunk_id` is being loaded (or waits to be) in the background: get() would wait for it.
  bool loading(uint32_t chunk_id) const;
  /// True while any chunk is (a cheap test before asking loading() of many).
  bool any_loading() const { return !wanted_.empty() || in_flight_->load(std::memory_order_acquire) > 0; }
  /// Drops every chunk for which `keep` is false. A background load that has not started yet is cancelled
  /// (a restore or a new sweep can drop a whole window of queued loads); one in flight finishes and is
  /// discarded.
  void retain_if(const std::function<bool(uint32_t)>& keep);
  void clear();
  size_t size() const { return chunks_.size(); }
  /// Background loads cancelled before they started, so far (for tests).
  uint64_t cancelled_loads() const { return *cancelled_; }

 private:
  void start_load(uint32_t chunk_id);

  struct Entry {
    std::shared_future<ChunkPtr> chunk;
    std::shared_ptr<std::atomic<bool>> dropped;  // set when the entry is dropped; null for loads done here
  };
  std::shared_ptr<Deserializer> deserializer_;
  std::shared_ptr<core::ThreadPool> pool_;
  std::shared_ptr<StageTimes> times_;
  std::unordered_map<uint32_t, Entry> chunks_;
  std::vector<uint32_t> wanted_;             // prefetch()ed, not started yet, in the order asked for
  std::unordered_set<uint32_t> wanted_ids_;  // the same ids, looked up (a window of many chunks)
  std::shared_ptr<std::atomic<uint64_t>> cancelled_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::shared_ptr<std::atomic<int64_t>> in_flight_ = std::make_shared<std::atomic<int64_t>>(0);  // loads
};

}  // namespace cntkio::pipeline
