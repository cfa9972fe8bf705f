// The CTF index's sequence records, stored compactly: each record is written as the differences from the
// record before it (key, gap between the two byte ranges, size, samples), each a variable-length integer.
// Typical files need 4–8 bytes per sequence instead of the 24 of an IndexedSequence; a checkpoint every
// kStride records makes any record reachable by decoding at most kStride - 1 others.
//
// Thread-safety: const members may be called concurrently; append() and take() need exclusive access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace cntkio::ctf {

struct IndexedSequence {
  uint64_t key = 0;      ///< numeric id (id mode) or 0-based line number (line mode)
  uint64_t offset = 0;   ///< byte offset of its first row
  uint32_t samples = 0;  ///< indexed rows (scheduling length)
  uint32_t size = 0;     ///< bytes, up to and including the last LF (or EOF)
};

class SequenceList {
 public:
  static constexpr size_t kStride = 32;

  SequenceList() = default;
  SequenceList(SequenceList&&) noexcept = default;
  SequenceList& operator=(SequenceList&&) noexcept = default;

  /// Appends `s` after the last record.
  void append(const IndexedSequence& s);
  /// Appends every record of `other` with `key_shift` added to its key, and empties `other` as it goes.
  void take(SequenceList& other, uint64_t key_shift);

  uint64_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  /// Bytes held (records, checkpoints and page slack).
  uint64_t memory_bytes() const;
  /// Whether the keys never decrease in record order; then equal keys are neighbours.
  bool keys_ascending() const { return keys_ascending_; }
  /// Records whose key equals the key of the record before (with ascending keys: every repeated key).
  uint64_t adjacent_equal_keys() const { return adjacent_equal_keys_; }

  /// Record `index` (below size()).
  IndexedSequence at(uint64_t index) const;
  /// Records [first, first + count), appended to `out`.
  void decode(uint64_t first, uint64_t count, std::vector<IndexedSequence>& out) const;
  /// Calls fn(const IndexedSequence&) for every record in order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    Cursor cursor = cursor_at(0);
    for (uint64_t i = 0; i < count_; ++i) fn(next(cursor));
  }
  /// With keys_ascending(): the index of the first record whose key is not less than `key` (size() if none).
  uint64_t lower_bound(uint64_t key) const;
  /// With keys_ascending(): the first record with `key` and its index, if there is one.
  bool find_first(uint64_t key, uint64_t& index, IndexedSequence& record) const;

 private:
  static constexpr size_t kPageBytes = 64 * 1024;
  static constexpr size_t kMaxRecordBytes = 4 * 10;  // four varints of up to 10 bytes

  struct Checkpoint {
    uint32_t page = 0;
    uint32_t offset = 0;  // within the page, of the record after the checkpoint
    uint64_t key = 0;     // of the record before it (the first record: 0)
    uint64_t end = 0;     // offset + size of the record before it (the first record: 0)
  };
  struct Cursor {
    uint32_t page = 0;
    uint32_t offset = 0;
    uint64_t key = 0;
    uint64_t end = 0;
  };

  Cursor cursor_at(uint64_t index) const;
  IndexedSequence next(Cursor& cursor) const;

  std::vector<std::unique_ptr<uint8_t[]>> pages_;
  size_t used_in_last_page_ = kPageBytes;   // no page yet
  std::vector<Checkpoint> checkpoints_;     // one before records 0, kStride, 2 kStride, ...
  std::vector<uint64_t> block_first_keys_;  // the key of records 0, kStride, 2 kStride, ... (for searches)
  uint64_t count_ = 0;
  uint64_t last_key_ = 0;
  uint64_t last_end_ = 0;
  uint64_t adjacent_equal_keys_ = 0;
  bool keys_ascending_ = true;
};

}  // namespace cntkio::ctf
