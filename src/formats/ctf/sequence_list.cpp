#include "formats/ctf/sequence_list.hpp"

#include <algorithm>

namespace cntkio::ctf {
namespace {

uint8_t* put_varint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

const uint8_t* get_varint(const uint8_t* p, uint64_t& v) {
  uint64_t result = *p & 0x7F;
  unsigned shift = 7;
  while (*p++ & 0x80) {
    result |= static_cast<uint64_t>(*p & 0x7F) << shift;
    shift += 7;
  }
  v = result;
  return p;
}

// Differences may be negative (a cache's records need not be in file order): zigzag keeps small ones short.
uint64_t zigzag(uint64_t difference) {
  const auto d = static_cast<int64_t>(difference);
  return (static_cast<uint64_t>(d) << 1) ^ static_cast<uint64_t>(d >> 63);
}
uint64_t unzigzag(uint64_t z) {
  return (z >> 1) ^ (~(z & 1) + 1);
}

}  // namespace

void SequenceList::append(const IndexedSequence& s) {
  if (used_in_last_page_ + kMaxRecordBytes > kPageBytes) {
    pages_.push_back(std::make_unique_for_overwrite<uint8_t[]>(kPageBytes));
    used_in_last_page_ = 0;
  }
  if (count_ % kStride == 0) {
    checkpoints_.push_back(Checkpoint{static_cast<uint32_t>(pages_.size() - 1),
                                      static_cast<uint32_t>(used_in_last_page_), last_key_, last_end_});
    block_first_keys_.push_back(s.key);
  }
  if (count_ > 0 && s.key < last_key_) keys_ascending_ = false;
  if (count_ > 0 && s.key == last_key_) ++adjacent_equal_keys_;
  uint8_t* const start = pages_.back().get() + used_in_last_page_;
  uint8_t* p = put_varint(start, zigzag(s.key - last_key_));
  p = put_varint(p, zigzag(s.offset - last_end_));
  p = put_varint(p, s.size);
  p = put_varint(p, s.samples);
  used_in_last_page_ += static_cast<size_t>(p - start);
  last_key_ = s.key;
  last_end_ = s.offset + s.size;
  ++count_;
}

void SequenceList::take(SequenceList& other, uint64_t key_shift) {
  Cursor cursor = other.cursor_at(0);
  for (uint64_t i = 0; i < other.count_; ++i) {
    const uint32_t page = cursor.page;
    IndexedSequence s = other.next(cursor);
    if (cursor.page != page) other.pages_[page].reset();  // consumed: free it before the next one is read
    s.key += key_shift;
    append(s);
  }
  other = SequenceList();
}

uint64_t SequenceList::memory_bytes() const {
  return pages_.size() * kPageBytes + checkpoints_.capacity() * sizeof(Checkpoint) +
         block_first_keys_.capacity() * sizeof(uint64_t) + pages_.capacity() * sizeof(pages_[0]);
}

SequenceList::Cursor SequenceList::cursor_at(uint64_t index) const {
  if (count_ == 0) return Cursor{};
  const Checkpoint& c = checkpoints_[index / kStride];
  Cursor cursor{c.page, c.offset, c.key, c.end};
  for (uint64_t skip = index % kStride; skip > 0; --skip) next(cursor);
  return cursor;
}

IndexedSequence SequenceList::next(Cursor& cursor) const {
  // A record never spans pages: append() starts a new page when the rest could not hold the longest one, and
  // the next record after a page's last one starts at the next page.
  if (cursor.offset + kMaxRecordBytes > kPageBytes) {
    ++cursor.page;
    cursor.offset = 0;
  }
  const uint8_t* const start = pages_[cursor.page].get() + cursor.offset;
  uint64_t key_step = 0, gap = 0, size = 0, samples = 0;
  const uint8_t* p = get_varint(start, key_step);
  p = get_varint(p, gap);
  p = get_varint(p, size);
  p = get_varint(p, samples);
  cursor.offset += static_cast<uint32_t>(p - start);
  IndexedSequence s;
  s.key = cursor.key + unzigzag(key_step);
  s.offset = cursor.end + unzigzag(gap);
  s.size = static_cast<uint32_t>(size);
  s.samples = static_cast<uint32_t>(samples);
  cursor.key = s.key;
  cursor.end = s.offset + s.size;
  return s;
}

IndexedSequence SequenceList::at(uint64_t index) const {
  Cursor cursor = cursor_at(index);
  return next(cursor);
}

void SequenceList::decode(uint64_t first, uint64_t count, std::vector<IndexedSequence>& out) const {
  if (count == 0) return;
  out.reserve(out.size() + count);
  Cursor cursor = cursor_at(first);
  for (uint64_t i = 0; i < count; ++i) out.push_back(next(cursor));
}

uint64_t SequenceList::lower_bound(uint64_t key) const {
  // The first block whose first key is not less than `key`; the answer lies in the block before it or is it.
  const uint64_t block = static_cast<uint64_t>(
      std::lower_bound(block_first_keys_.begin(), block_first_keys_.end(), key) - block_first_keys_.begin());
  if (block == 0) return 0;
  uint64_t index = (block - 1) * kStride;
  Cursor cursor = cursor_at(index);
  for (; index < count_ && index < block * kStride; ++index) {
    if (next(cursor).key >= key) return index;
  }
  return index;
}

bool SequenceList::find_first(uint64_t key, uint64_t& index, IndexedSequence& record) const {
  const uint64_t block = static_cast<uint64_t>(
      std::lower_bound(block_first_keys_.begin(), block_first_keys_.end(), key) - block_first_keys_.begin());
  // The record is the first of block `block` (its first key equals `key`) or lies in the block before.
  uint64_t i = block == 0 ? 0 : (block - 1) * kStride;
  Cursor cursor = cursor_at(i);
  for (; i < count_ && i <= block * kStride; ++i) {
    const IndexedSequence s = next(cursor);
    if (s.key < key) continue;
    if (s.key != key) return false;
    index = i;
    record = s;
    return true;
  }
  return false;
}

}  // namespace cntkio::ctf
