// core::LineEnds: the line ends of a text in order, for scanners of line-based files (the CTF indexer).
//
// Thread-safety: an object is used by one thread; several may scan the same text.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cntkio::core {

// Finds the LFs of a text 64 bytes at a time: four SSE2 compares give a bit mask of the LFs in the block,
// and each line then takes one set bit. CTF lines are often 20-40 bytes long, where a memchr call per line
// costs more than its search. A line longer than two blocks (dense rows of hundreds of values) is left to
// memchr, whose wider search wins there, and so are the last bytes of the text (less than a block), so
// nothing is read past its end.
class LineEnds {
 public:
  explicit LineEnds(std::string_view data) : data_(data) {}

  // Offset just past the first LF at or after `pos` (<= the text's size), or the text's size if none. Any
  // `pos` works; calls with a rising `pos` (line after line) reuse the block already compared.
  [[gnu::always_inline]] size_t after_next_lf(size_t pos) {
#if defined(__SSE2__)
    if (pos < base_ || pos - base_ >= kBlock) load(pos);
    for (int block = 0;; ++block) {
      if (!loaded_) return by_memchr(pos);
      const uint64_t live = mask_ & (~uint64_t{0} << (pos - base_));
      if (live != 0) return base_ + static_cast<size_t>(std::countr_zero(live)) + 1;
      pos = base_ + kBlock;
      if (block == 1) {  // a long line: memchr's wider search is faster there
        loaded_ = false;
        return by_memchr(pos);
      }
      load(pos);
    }
#else
    return by_memchr(pos);
#endif
  }

 private:
  static constexpr size_t kBlock = 64;

  size_t by_memchr(size_t pos) const {
    const void* hit = std::memchr(data_.data() + pos, '\n', data_.size() - pos);
    return hit == nullptr ? data_.size()
                          : static_cast<size_t>(static_cast<const char*>(hit) - data_.data()) + 1;
  }

#if defined(__SSE2__)
  [[gnu::always_inline]] void load(size_t pos) {
    base_ = pos;
    loaded_ = data_.size() - pos >= kBlock;
    if (!loaded_) return;
    const char* p = data_.data() + pos;
    const __m128i lf = _mm_set1_epi8('\n');
    uint64_t mask = 0;
    for (size_t i = 0; i < kBlock; i += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      mask |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, lf)))) << i;
    }
    mask_ = mask;
  }

  size_t base_ = 0;      // the block's offset (none until the first position past the first block)
  uint64_t mask_ = 0;    // bit i: an LF at base_ + i
  bool loaded_ = false;  // false: no block (none yet, or it would run past the end)
#endif
  std::string_view data_;
};

}  // namespace cntkio::core
