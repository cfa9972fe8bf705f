// Chunks of a deserializer that are still held somewhere (CNTK's bundler re-uses such secondary chunks): a
// chunk asked for again while alive is handed out again instead of being read and parsed once more. In a
// composite reader every primary chunk loads its labels' chunk, which usually holds the labels of many
// primary chunks.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "cntkio/sequence.hpp"

namespace cntkio::htk {

class AliveChunks {
 public:
  /// The alive chunk `id`, or `load()`'s result (remembered weakly). Thread-safe; `load` runs unlocked.
  template <typename Load>
  ChunkPtr get(uint32_t id, Load&& load) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = chunks_.find(id);
      if (it != chunks_.end()) {
        if (ChunkPtr alive = it->second.lock()) return alive;
      }
    }
    ChunkPtr loaded = load();
    std::lock_guard<std::mutex> lock(mutex_);
    std::weak_ptr<const Chunk>& slot = chunks_[id];
    if (ChunkPtr alive = slot.lock()) return alive;  // another thread was faster
    slot = loaded;
    return loaded;
  }

 private:
  std::mutex mutex_;
  std::map<uint32_t, std::weak_ptr<const Chunk>> chunks_;
};

}  // namespace cntkio::htk
