// The storage of a parsed CTF chunk: per-stream buffers of each part of the chunk, the slots that say where
// each sequence's data lies in them, and the chunk that hands them out (and, released, leaves them to the
// StorageRecycler). Private to the CTF parser.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "cntkio/sequence.hpp"
#include "formats/ctf/ctf_parser.hpp"

namespace cntkio::ctf {

// A growable array of a trivially copyable type whose growth leaves new elements uninitialized, so that the
// row fast path writes each value once, through a plain pointer. Grows with realloc, which can move large
// blocks without copying.
template <typename T>
class PodBuffer {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  PodBuffer() = default;
  PodBuffer(const PodBuffer&) = delete;
  PodBuffer& operator=(const PodBuffer&) = delete;
  PodBuffer(PodBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  PodBuffer& operator=(PodBuffer&&) = delete;
  ~PodBuffer() { std::free(data_); }

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  T* data() { return data_; }
  const T* data() const { return data_; }

  // Takes over `block` (from malloc, `bytes` long) as its storage; only while it holds none.
  void adopt(void* block, size_t bytes) {
    std::free(data_);
    data_ = static_cast<T*>(block);
    size_ = 0;
    capacity_ = bytes / sizeof(T);
  }
  // Gives up its storage, {block, bytes}: the caller frees it. The buffer is then empty.
  std::pair<void*, size_t> release() {
    std::pair<void*, size_t> out{data_, capacity_ * sizeof(T)};
    data_ = nullptr;
    size_ = capacity_ = 0;
    return out;
  }

  void reserve(size_t n) {
    if (n <= capacity_) return;
    void* grown = std::realloc(data_, n * sizeof(T));
    if (grown == nullptr) throw std::bad_alloc();
    data_ = static_cast<T*>(grown);
    capacity_ = n;
  }
  // Room for `n` more elements; returns where they go (then set_size).
  T* make_room(size_t n) {
    if (size_ + n > capacity_) reserve(std::max(size_ + n, capacity_ * 2));
    return data_ + size_;
  }
  void set_size(size_t n) { size_ = n; }  // n <= capacity(); elements up to n must have been written
  void push_back(T value) {
    *make_room(1) = value;
    ++size_;
  }
  // Shrinks, or grows with `fill`. (The end of the fill is taken from make_room's result: `data_ + n` could
  // be evaluated before make_room moves the block.)
  void resize(size_t n, T fill = T()) {
    if (n > size_) {
      T* const first = make_room(n - size_);
      std::fill(first, first + (n - size_), fill);
    }
    size_ = n;
  }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// Storage of one stream for all sequences of a chunk (or of one part of it). Cache-line aligned: the parser
// updates the buffers' sizes at every sample, and the parts of one chunk, parsed by different threads, would
// otherwise share cache lines (their small vectors lie side by side on the heap), which cost the 2-thread
// parse about 40 % more CPU than one thread.
template <typename T>
struct alignas(64) StreamStorage {
  PodBuffer<T> values;
  PodBuffer<int32_t> indices;      // sparse only, parallel to values
  PodBuffer<uint32_t> nnz_counts;  // sparse only, one per sample
};

// Where the data of one stream of one sequence lies: in the StreamStorage of part `part` of the chunk.
// A sparse stream whose samples all hold one entry (one-hot words and labels) stores no counts: its
// nnz_begin is kOneEntryEach and its counts are the chunk's shared run of ones.
struct Slot {
  static constexpr size_t kOneEntryEach = ~size_t{0};
  uint32_t samples = 0;
  uint32_t part = 0;
  size_t value_begin = 0;
  size_t nnz_begin = 0;
  size_t total_nnz = 0;
};

// The StorageRecycler key of one array of one stream of one part of a chunk.
enum class StorageArray : size_t { kValues, kIndices, kNnzCounts };
inline size_t storage_key(size_t part, size_t stream, size_t num_streams, StorageArray array) {
  return (part * num_streams + stream) * 3 + static_cast<size_t>(array);
}

// A chunk parsed in `parts` parts (consecutive runs of sequences, each parsed by one thread into its own
// storage); a chunk parsed by one thread has one part. Released, it leaves its buffers to `recycler`.
template <typename T>
class CtfChunk final : public Chunk {
 public:
  CtfChunk(const std::vector<StreamInfo>& streams, size_t num_sequences, size_t parts,
           std::shared_ptr<StorageRecycler> recycler)
      : parts_(parts),
        sparse_(streams.size()),
        slots_(streams.size() * num_sequences),
        num_streams_(streams.size()),
        recycler_(std::move(recycler)) {
    for (auto& part : parts_) part = std::vector<StreamStorage<T>>(streams.size());
    for (size_t s = 0; s < streams.size(); ++s) sparse_[s] = streams[s].storage == StorageFormat::kSparseCsc;
  }

  // After every part is parsed: the shared counts, as long as the longest sequence that uses them.
  void share_ones(size_t longest) { ones_.assign(longest, 1); }

  ~CtfChunk() override {
    if (!recycler_) return;
    for (size_t p = 0; p < parts_.size(); ++p) {
      for (size_t s = 0; s < num_streams_; ++s) {
        StreamStorage<T>& storage = parts_[p][s];
        recycle(storage.values, storage_key(p, s, num_streams_, StorageArray::kValues));
        recycle(storage.indices, storage_key(p, s, num_streams_, StorageArray::kIndices));
        recycle(storage.nnz_counts, storage_key(p, s, num_streams_, StorageArray::kNnzCounts));
      }
    }
  }

  void get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const override {
    const size_t n = num_streams_;
    for (size_t s = 0; s < n; ++s) {
      const Slot& slot = slots_[index_in_chunk * n + s];
      const StreamStorage<T>& storage = parts_[slot.part][s];
      SequenceData d;
      d.number_of_samples = slot.samples;
      d.values = storage.values.data() + slot.value_begin;
      if (sparse_[s]) {
        d.indices = storage.indices.data() + slot.value_begin;
        d.nnz_counts =
            slot.nnz_begin == Slot::kOneEntryEach ? ones_.data() : storage.nnz_counts.data() + slot.nnz_begin;
        d.total_nnz = slot.total_nnz;
      }
      out.push_back(d);
    }
  }

  void prefetch_sequence(uint32_t index_in_chunk) const override {
    const size_t first = static_cast<size_t>(index_in_chunk) * num_streams_;
    if (first + num_streams_ > slots_.size()) return;
    __builtin_prefetch(&slots_[first]);
    __builtin_prefetch(&slots_[first + num_streams_ - 1]);
  }

  std::vector<std::vector<StreamStorage<T>>> parts_;  // [part][stream]
  std::vector<bool> sparse_;
  std::vector<Slot> slots_;  // [sequence * streams + stream]
  size_t num_streams_;
  std::shared_ptr<StorageRecycler> recycler_;
  std::vector<uint32_t> ones_;  // the counts of every Slot::kOneEntryEach slot

 private:
  template <typename E>
  void recycle(PodBuffer<E>& buffer, size_t key) {
    if (buffer.capacity() * sizeof(E) < StorageRecycler::kMinBytes) return;
    const auto [block, bytes] = buffer.release();
    recycler_->give(key, block, bytes);
  }
};

// Reserves the storage of part `part_index` of a chunk, whose sequences are `sequences`, from its byte size
// (so that its buffers rarely grow), in blocks released chunks left where they are large enough.
template <typename T>
void reserve_part(const ParseContext& context, std::span<const IndexedSequence> sequences, size_t part_index,
                  std::vector<StreamStorage<T>>& part);

}  // namespace cntkio::ctf
