#include "pipeline/chunk_loader.hpp"

#include <algorithm>

#include "pipeline/randomizer_common.hpp"

namespace cntkio::pipeline {

ChunkLoader::ChunkLoader(std::shared_ptr<Deserializer> deserializer, std::shared_ptr<core::ThreadPool> pool,
                         std::shared_ptr<StageTimes> times)
    : deserializer_(std::move(deserializer)), pool_(std::move(pool)), times_(std::move(times)) {}

// A load in flight holds its own reference to the deserializer, so dropping its future never waits.
ChunkLoader::~ChunkLoader() = default;

void ChunkLoader::prefetch(uint32_t chunk_id) {
  if (!pool_ || pool_->size() == 0 || chunks_.count(chunk_id) != 0) return;
  if (wanted_ids_.insert(chunk_id).second) wanted_.push_back(chunk_id);
}

void ChunkLoader::flush() {
  if (wanted_.empty()) return;
  std::vector<uint32_t> wanted;
  wanted.swap(wanted_);
  wanted_ids_.clear();
  for (uint32_t chunk_id : wanted) {
    if (chunks_.count(chunk_id) == 0) start_load(chunk_id);
  }
}

void ChunkLoader::start_load(uint32_t chunk_id) {
  std::shared_ptr<Deserializer> deserializer = deserializer_;
  auto dropped = std::make_shared<std::atomic<bool>>(false);
  auto cancelled = cancelled_;
  in_flight_->fetch_add(1, std::memory_order_acq_rel);
  auto load = [deserializer, chunk_id, dropped, cancelled, in_flight = in_flight_,
               times = times_]() -> ChunkPtr {
    // Counted down as the load returns, just before its future is set: any_loading() may turn false a
    // moment before the last future is ready, which costs a short wait in get(), nothing else.
    struct Done {
      std::atomic<int64_t>& count;
      ~Done() { count.fetch_sub(1, std::memory_order_acq_rel); }
    } done{*in_flight};
    if (dropped->load(std::memory_order_acquire)) {  // nobody waits for it any more
      cancelled->fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    const StageTimer timer(times ? &times->load_ns : nullptr);
    return load_chunk_checked(*deserializer, chunk_id);
  };
  chunks_.emplace(chunk_id, Entry{pool_->submit(std::move(load)).share(), std::move(dropped)});
}

ChunkPtr ChunkLoader::get(uint32_t chunk_id) {
  flush();
  auto it = chunks_.find(chunk_id);
  if (it == chunks_.end()) {
    std::promise<ChunkPtr> loaded;
    try {
      // Loaded on this thread: the pool's idle workers may still help parse it.
      const core::ThreadPool::ScopedCurrent helpers(pool_.get());
      const StageTimer load_timer(times_ ? &times_->load_ns : nullptr);
      const StageTimer reader_timer(times_ ? &times_->reader_load_ns : nullptr);
      loaded.set_value(load_chunk_checked(*deserializer_, chunk_id));
    } catch (...) {
      loaded.set_exception(std::current_exception());
    }
    it = chunks_.emplace(chunk_id, Entry{loaded.get_future().share(), nullptr}).first;
  }
  try {
    if (times_ && it->second.chunk.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      const StageTimer timer(&times_->chunk_wait_ns);
      it->second.chunk.wait();
    }
    return it->second.chunk.get();
  } catch (...) {
    chunks_.erase(it);  // a later request (e.g. after a restore) tries again
    throw;
  }
}

bool ChunkLoader::loading(uint32_t chunk_id) const {
  if (wanted_ids_.count(chunk_id) != 0) return true;
  const auto it = chunks_.find(chunk_id);
  return it != chunks_.end() && it->second.dropped &&
         it->second.chunk.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
}

void ChunkLoader::retain_if(const std::function<bool(uint32_t)>& keep) {
  std::erase_if(wanted_, [&](uint32_t chunk_id) {
    if (keep(chunk_id)) return false;
    wanted_ids_.erase(chunk_id);
    return true;
  });
  for (auto it = chunks_.begin(); it != chunks_.end();) {
    if (keep(it->first)) {
      ++it;
    } else {
      if (it->second.dropped) it->second.dropped->store(true, std::memory_order_release);
      it = chunks_.erase(it);
    }
  }
}

void ChunkLoader::clear() {
  retain_if([](uint32_t) { return false; });
}

}  // namespace cntkio::pipeline
