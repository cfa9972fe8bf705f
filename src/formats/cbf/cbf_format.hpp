// Internals shared by the CBF reader and writer: layout constants, little-endian encoding, and a bounded
// cursor that turns every out-of-range read into a located FormatError.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/cbf.hpp"
#include "cntkio/errors.hpp"

namespace cntkio::cbf {

static_assert(std::endian::native == std::endian::little,
              "CBF values are stored in little-endian byte order");

inline constexpr uint32_t kVersion = 1;        // the only version of the current layout
inline constexpr uint64_t kPrefixSize = 12;    // magic + version
inline constexpr uint64_t kTrailerSize = 8;    // int64 header offset
inline constexpr uint64_t kChunkRowSize = 16;  // int64 offset, uint32 sequences, uint32 samples
inline constexpr uint64_t kMaxSparseDim = 0x7FFFFFFFull;
inline constexpr int64_t kLegacyVersion = 1;

/// Throws FormatError(message) located at `offset` of `file`.
[[noreturn]] void fail(const std::string& file, uint64_t offset, const std::string& message);

/// Reads little-endian fields from `size` bytes at `data`, which start at absolute file offset `base`.
/// Reading past the end throws FormatError naming the field, its offset and `limit` (what ends the range).
class Cursor {
 public:
  Cursor(const std::string& file, const unsigned char* data, uint64_t size, uint64_t base, std::string limit)
      : file_(file), data_(data), size_(size), base_(base), limit_(std::move(limit)) {}

  uint64_t offset() const { return base_ + pos_; }  ///< absolute file offset of the next byte
  uint64_t position() const { return pos_; }        ///< bytes consumed
  uint64_t remaining() const { return size_ - pos_; }
  const unsigned char* here() const { return data_ + pos_; }

  uint8_t u8(const char* what) { return *take(1, what); }
  uint32_t u32(const char* what) { return load<uint32_t>(what); }
  int32_t i32(const char* what) { return load<int32_t>(what); }
  uint64_t u64(const char* what) { return load<uint64_t>(what); }
  int64_t i64(const char* what) { return load<int64_t>(what); }

  /// Pointer to the next `n` bytes, which are consumed. Throws if fewer remain.
  const unsigned char* take(uint64_t n, const char* what) {
    need(n, what);
    const unsigned char* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  /// Throws unless `n` more bytes remain.
  void need(uint64_t n, const char* what) const {
    if (n > size_ - pos_) truncated(n, what);
  }
  [[noreturn]] void truncated(uint64_t n, const char* what) const;
  [[noreturn]] void error(const std::string& message) const { fail(file_, offset(), message); }
  [[noreturn]] void error_at(uint64_t absolute_offset, const std::string& message) const {
    fail(file_, absolute_offset, message);
  }

 private:
  template <typename T>
  T load(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }

  const std::string& file_;
  const unsigned char* data_;
  uint64_t size_;
  uint64_t base_;
  uint64_t pos_ = 0;
  std::string limit_;
};

/// Parses the header of a whole CBF file (`data` = the file). Throws FormatError.
CbfHeader parse_header(const std::string& file, std::string_view data);

/// Appends little-endian integers to a byte buffer.
inline void put_u8(std::vector<unsigned char>& out, uint8_t v) {
  out.push_back(v);
}
template <typename T>
inline void put_le(std::vector<unsigned char>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

}  // namespace cntkio::cbf
