// Reading NumPy .npy files: the header, checked against the file's size, and the values.
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cntkio_npy {

/// What the header of a .npy file says, once checked.
struct NpyHeader {
  bool is_double = false;    ///< '<f8' values; else '<f4'
  uint64_t rows = 0;         ///< shape[0]: the samples of the sequence (at least 1, at most 2^32 - 1)
  uint64_t columns = 0;      ///< shape[1]: the values of a sample (at least 1)
  uint64_t data_offset = 0;  ///< where the values start; they fill the file to its end
  friend bool operator==(const NpyHeader&, const NpyHeader&) = default;
};

/// The longest header accepted, in bytes (NumPy writes fewer than 200 for a 2-D array).
inline constexpr uint64_t kMaxHeaderBytes = 65536;

/// Parses and checks the header of a file of `file_size` bytes whose first bytes are `start` (at least
/// min(file_size, 12 + kMaxHeaderBytes) of them). Throws cntkio::FormatError naming `path` and the byte
/// offset of what is wrong.
NpyHeader parse_npy_header(std::string_view start, uint64_t file_size, const std::string& path);

/// Reads and checks the header of the file `path`. Throws cntkio::IoError (cannot open or read, not a
/// regular file) and cntkio::FormatError.
NpyHeader read_npy_header(const std::string& path);

/// Reads the values of the file `path`, whose header is `header`, converted to T (float or double).
/// Throws cntkio::IoError, and cntkio::FormatError when the file no longer has that header.
template <class T>
std::vector<T> read_npy_values(const std::string& path, const NpyHeader& header);

}  // namespace cntkio_npy
