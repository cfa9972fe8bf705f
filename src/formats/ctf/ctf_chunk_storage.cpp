#include "formats/ctf/ctf_chunk_storage.hpp"

#include <mutex>

namespace cntkio::ctf {
namespace {

// Room for `n` elements in an empty `buffer`, in the block a released chunk left for `key` where it is large
// enough (its pages are mapped already).
template <typename E>
void reserve_recycled(const ParseContext& context, size_t key, uint64_t n, PodBuffer<E>& buffer) {
  if (context.recycler) {
    const auto [block, bytes] = context.recycler->take(key, n * sizeof(E));
    if (block != nullptr) buffer.adopt(block, bytes);
  }
  buffer.reserve(n);
}

}  // namespace

template <typename T>
void reserve_part(const ParseContext& context, std::span<const IndexedSequence> sequences, size_t part_index,
                  std::vector<StreamStorage<T>>& part) {
  // A value takes at least 2 bytes in the file.
  uint64_t bytes = 0;
  uint64_t samples = 0;
  for (const IndexedSequence& s : sequences) {
    bytes += s.size;
    samples += s.samples;
  }
  const size_t num_streams = context.streams->size();
  size_t num_dense = 0;
  for (const StreamInfo& stream : *context.streams) num_dense += stream.storage == StorageFormat::kDense;
  // Bounds for all streams together: about one dense value per byte, and a sparse entry takes at least 4
  // bytes ("1:1 "). Untouched reserved pages cost no memory, so a few streams may each reserve the whole
  // bound; with many streams each reserves a share, which keeps the part's reservation linear in its bytes
  // rather than in bytes times streams.
  constexpr uint64_t kStreamsReservingAll = 4;
  auto share = [&](uint64_t bound, size_t streams) {
    return streams <= kStreamsReservingAll ? bound : bound * kStreamsReservingAll / streams;
  };
  const uint64_t dense_values = share(bytes, num_dense);
  const uint64_t sparse_entries = share(bytes / 4, num_streams - num_dense);
  for (size_t s = 0; s < num_streams; ++s) {
    const StreamInfo& stream = (*context.streams)[s];
    auto key = [&](StorageArray array) { return storage_key(part_index, s, num_streams, array); };
    if (stream.storage == StorageFormat::kDense) {
      reserve_recycled(context, key(StorageArray::kValues),
                       std::min<uint64_t>(samples * stream.sample_dim(), dense_values), part[s].values);
    } else {
      reserve_recycled(context, key(StorageArray::kValues), sparse_entries, part[s].values);
      reserve_recycled(context, key(StorageArray::kIndices), sparse_entries, part[s].indices);
      reserve_recycled(context, key(StorageArray::kNnzCounts), 0, part[s].nnz_counts);
    }
  }
}

template void reserve_part<float>(const ParseContext&, std::span<const IndexedSequence>, size_t,
                                  std::vector<StreamStorage<float>>&);
template void reserve_part<double>(const ParseContext&, std::span<const IndexedSequence>, size_t,
                                   std::vector<StreamStorage<double>>&);

StorageRecycler::~StorageRecycler() {
  for (auto& [key, block] : blocks_) std::free(block.first);
}

std::pair<void*, size_t> StorageRecycler::take(size_t key, size_t min_bytes) {
  std::pair<void*, size_t> block{nullptr, 0};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(key);
    if (it == blocks_.end()) return block;
    block = it->second;
    blocks_.erase(it);
  }
  if (block.second >= min_bytes) return block;
  std::free(block.first);
  return {nullptr, 0};
}

void StorageRecycler::give(size_t key, void* block, size_t bytes) noexcept {
  if (bytes < kMinBytes) {
    std::free(block);
    return;
  }
  void* replaced = nullptr;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, added] = blocks_.try_emplace(key, block, bytes);
    if (!added) {
      replaced = it->second.first;
      it->second = {block, bytes};
    }
  } catch (const std::bad_alloc&) {
    // Called from a chunk's destructor, maybe while a bad_alloc unwinds: keeping the block is only a
    // saving, so free it rather than let an exception leave the destructor.
    replaced = block;
  }
  std::free(replaced);
}

size_t StorageRecycler::held_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t bytes = 0;
  for (const auto& [key, block] : blocks_) bytes += block.second;
  return bytes;
}

}  // namespace cntkio::ctf
