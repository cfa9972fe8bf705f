#include "formats/ctf/ctf_index_registry.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

namespace cntkio::ctf {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<SharedIndexKey, std::weak_ptr<const CtfIndex>> entries;
  size_t size_after_prune = 0;  // entries left by the last removal of expired ones
};

Registry& registry() {
  // Never destroyed: deserializers destroyed during static destruction may still look it up.
  static Registry* instance = [] {
    auto* r = new Registry;
    // A fork while another thread holds the mutex would leave it locked forever in the child; the handlers
    // keep fork out of the (short) critical sections instead.
    ::pthread_atfork([] { registry().mutex.lock(); }, [] { registry().mutex.unlock(); },
                     [] { registry().mutex.unlock(); });
    return r;
  }();
  return *instance;
}

std::atomic<uint64_t> g_index_builds{0};

}  // namespace

void count_index_build() {
  g_index_builds.fetch_add(1, std::memory_order_relaxed);
}
uint64_t index_builds() {
  return g_index_builds.load(std::memory_order_relaxed);
}

bool settled_for_sharing(const core::FileIdentity& file, int64_t now_ns) {
  constexpr int64_t kSettleNs = 1000000000;
  return std::max(file.mtime_ns, file.ctime_ns) <= now_ns - kSettleNs;
}

std::shared_ptr<const CtfIndex> find_shared_index(const SharedIndexKey& key) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.entries.find(key);
  return it == r.entries.end() ? nullptr : it->second.lock();
}

void share_index(const SharedIndexKey& key, const std::shared_ptr<const CtfIndex>& index) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  // Expired entries go when the map has doubled since the last removal: a corpus of n files shares n indexes
  // in O(n log n), not O(n^2) as a walk per file would.
  if (r.entries.size() >= 2 * std::max<size_t>(r.size_after_prune, 32)) {
    std::erase_if(r.entries, [](const auto& entry) { return entry.second.expired(); });
    r.size_after_prune = r.entries.size();
  }
  r.entries[key] = index;
}

}  // namespace cntkio::ctf
