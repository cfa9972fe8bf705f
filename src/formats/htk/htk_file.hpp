// HTK feature files: header, byte order, parameter kinds, compressed frames (spec htk.md §4), read with
// positioned reads of only the frames asked for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cntkio::htk {

/// A read-only file accessed with positioned reads (pread). Move-only.
class PositionedFile {
 public:
  PositionedFile() = default;
  /// Opens `path`. Throws IoError "error opening file '<path>': <reason>" (CNTK's text).
  explicit PositionedFile(const std::string& path);
  ~PositionedFile();
  PositionedFile(PositionedFile&& other) noexcept;
  PositionedFile& operator=(PositionedFile&& other) noexcept;
  PositionedFile(const PositionedFile&) = delete;
  PositionedFile& operator=(const PositionedFile&) = delete;

  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  /// Reads exactly `bytes` at `offset`; false if the file ends first. Throws IoError on a read failure.
  bool read_at(uint64_t offset, void* out, size_t bytes) const;

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
};

/// The header of one HTK feature file, decoded.
struct HtkHeader {
  uint32_t num_frames = 0;     ///< frames in the file (compressed: nSamples - 4)
  uint32_t sample_period = 0;  ///< 100 ns units
  uint16_t sample_size = 0;    ///< bytes per stored frame
  uint16_t parm_kind = 0;      ///< raw parameter kind
  bool big_endian = false;     ///< decided by CNTK's sampPeriod heuristic
  bool compressed = false;     ///< `_C`
  bool has_crc = false;        ///< `_K` (ignored)
  uint32_t dim = 0;            ///< values per frame
  uint64_t data_offset = 0;    ///< byte offset of frame 0
  std::string kind;            ///< kind string as CNTK builds it ("MFCC_E_D_A", "USER;guid=...")
  std::vector<float> a, b;     ///< compression vectors (compressed files only)
};

/// Reads and decodes the header of `file`. Throws FormatError with CNTK's texts for unsupported kinds, VQ
/// data and a sample size that is not a multiple of the value size.
HtkHeader read_header(const PositionedFile& file);

/// Reads frames [first, first + count) of `file` into `out` (count * header.dim floats), byte-swapping and
/// decompressing as needed. Throws FormatError if the file is shorter than its header says.
void read_frames(const PositionedFile& file, const HtkHeader& header, uint64_t first, uint64_t count,
                 float* out);

}  // namespace cntkio::htk
