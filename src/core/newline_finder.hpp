// Finds line feeds in a buffer 64 bytes at a time (SSE2 compare + bit masks), for indexers that visit every
// line of a file: with lines of a few dozen bytes this beats one memchr call per line several times over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cntkio::core {

class NewlineFinder {
 public:
  NewlineFinder(const char* data, size_t size) : data_(data), size_(size) {}

  /// Offset of the first '\n' at or after `from`, or the buffer size if there is none.
  size_t next(size_t from) {
    if (from >= size_) return size_;
    size_t block = from & ~size_t{63};
    if (block != block_ || !valid_) load(block);
    const uint64_t pending = mask_ & (~uint64_t{0} << (from - block_));
    if (pending != 0) return block_ + static_cast<size_t>(__builtin_ctzll(pending));
    // A long line: memchr finds its end faster than block masks; the block there serves the next lines.
    const size_t rest = block_ + 64;
    if (rest >= size_) return size_;
    const void* hit = std::memchr(data_ + rest, '\n', size_ - rest);
    if (hit == nullptr) return size_;
    const size_t lf = static_cast<size_t>(static_cast<const char*>(hit) - data_);
    load(lf & ~size_t{63});
    return lf;
  }

 private:
  void load(size_t block) {
    block_ = block;
    valid_ = true;
    const char* p = data_ + block;
    if (block + 64 <= size_) {
#if defined(__SSE2__)
      const __m128i lf = _mm_set1_epi8('\n');
      uint64_t m0 = static_cast<uint16_t>(
          _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), lf)));
      uint64_t m1 = static_cast<uint16_t>(
          _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)), lf)));
      uint64_t m2 = static_cast<uint16_t>(
          _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32)), lf)));
      uint64_t m3 = static_cast<uint16_t>(
          _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 48)), lf)));
      mask_ = m0 | (m1 << 16) | (m2 << 32) | (m3 << 48);
      return;
#endif
    }
    mask_ = 0;
    const size_t n = size_ - block < 64 ? size_ - block : 64;
    for (size_t i = 0; i < n; ++i) {
      if (p[i] == '\n') mask_ |= uint64_t{1} << i;
    }
  }

  const char* data_;
  size_t size_;
  size_t block_ = 0;
  bool valid_ = false;
  uint64_t mask_ = 0;
};

}  // namespace cntkio::core
