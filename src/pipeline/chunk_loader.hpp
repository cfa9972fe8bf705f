// ChunkLoader: loads a deserializer's chunks on background threads ahead of need, and keeps the chunks a
// randomizer still needs. Which chunks are loaded never changes what is delivered, only when the parsing
// happens; errors of a background load surface when the chunk is asked for. A load (in the background or on
// the caller's thread) runs with the pool as core::ThreadPool::current(), so a deserializer that can split
// one chunk's parse (CTF) uses the workers that are idle at that moment.
//
// Thread-safety: one thread (the randomizer's) calls it; the loads themselves run on the pool.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <unordered_map>

#include "cntkio/deserializer.hpp"
#include "core/thread_pool.hpp"

namespace cntkio::pipeline {

class ChunkLoader {
 public:
  /// `pool` may be null: chunks are then loaded on the caller's thread when asked for.
  ChunkLoader(std::shared_ptr<Deserializer> deserializer, std::shared_ptr<core::ThreadPool> pool);
  ~ChunkLoader();
  ChunkLoader(const ChunkLoader&) = delete;
  ChunkLoader& operator=(const ChunkLoader&) = delete;

  /// Starts loading `chunk_id` in the background unless it is loaded or loading (no-op without a pool).
  void prefetch(uint32_t chunk_id);
  /// The chunk, loaded now or awaited; rethrows the error of its load.
  ChunkPtr get(uint32_t chunk_id);
  /// Drops every chunk for which `keep` is false (a load in flight finishes and is discarded).
  void retain_if(const std::function<bool(uint32_t)>& keep);
  void clear();
  size_t size() const { return chunks_.size(); }

 private:
  std::shared_ptr<Deserializer> deserializer_;
  std::shared_ptr<core::ThreadPool> pool_;
  std::unordered_map<uint32_t, std::shared_future<ChunkPtr>> chunks_;
};

}  // namespace cntkio::pipeline
