#include "pipeline/chunk_loader.hpp"

#include "pipeline/randomizer_common.hpp"

namespace cntkio::pipeline {

ChunkLoader::ChunkLoader(std::shared_ptr<Deserializer> deserializer, std::shared_ptr<core::ThreadPool> pool)
    : deserializer_(std::move(deserializer)), pool_(std::move(pool)) {}

// A load in flight holds its own reference to the deserializer, so dropping its future never waits.
ChunkLoader::~ChunkLoader() = default;

void ChunkLoader::prefetch(uint32_t chunk_id) {
  if (!pool_ || pool_->size() == 0 || chunks_.count(chunk_id) != 0) return;
  std::shared_ptr<Deserializer> deserializer = deserializer_;
  chunks_.emplace(
      chunk_id,
      pool_->submit([deserializer, chunk_id] { return load_chunk_checked(*deserializer, chunk_id); })
          .share());
}

ChunkPtr ChunkLoader::get(uint32_t chunk_id) {
  auto it = chunks_.find(chunk_id);
  if (it == chunks_.end()) {
    std::promise<ChunkPtr> loaded;
    try {
      // Loaded on this thread: the pool's idle workers may still help parse it.
      const core::ThreadPool::ScopedCurrent helpers(pool_.get());
      loaded.set_value(load_chunk_checked(*deserializer_, chunk_id));
    } catch (...) {
      loaded.set_exception(std::current_exception());
    }
    it = chunks_.emplace(chunk_id, loaded.get_future().share()).first;
  }
  try {
    return it->second.get();
  } catch (...) {
    chunks_.erase(it);  // a later request (e.g. after a restore) tries again
    throw;
  }
}

void ChunkLoader::retain_if(const std::function<bool(uint32_t)>& keep) {
  for (auto it = chunks_.begin(); it != chunks_.end();) {
    if (keep(it->first)) {
      ++it;
    } else {
      it = chunks_.erase(it);
    }
  }
}

void ChunkLoader::clear() {
  retain_if([](uint32_t) { return false; });
}

}  // namespace cntkio::pipeline
