// HTK feature files: header, byte order, parameter kinds, compressed frames (spec htk.md §4), read with
// positioned reads of only the frames asked for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cntkio/htk.hpp"
#include "core/input_file.hpp"
#include "core/output_file.hpp"

namespace cntkio::htk {

/// A read-only HTK feature file accessed with positioned reads, opened through core::InputFile (so a
/// directory, FIFO or device is refused instead of read or waited on). Move-only.
class PositionedFile {
 public:
  PositionedFile() = default;
  /// Opens `path`. Throws IoError "error opening file '<path>': <reason>" (CNTK's text).
  explicit PositionedFile(const std::string& path);

  bool is_open() const { return file_.is_open(); }
  const std::string& path() const { return file_.path(); }
  /// Size in bytes when the file was opened.
  uint64_t size() const { return file_.size(); }
  /// Reads exactly `bytes` at `offset`; false if the file (as it was opened) ends first. Throws IoError on a
  /// read failure, and when bytes the file held when it was opened are gone (it was cut under the reader).
  bool read_at(uint64_t offset, void* out, size_t bytes) const;

 private:
  core::InputFile file_;
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

/// Throws the FormatError of read_frames() unless `file` holds frames [first, first + count) in full: checks
/// a range against the bytes that are there before anything is allocated for it.
void check_frames_present(const PositionedFile& file, const HtkHeader& header, uint64_t first,
                          uint64_t count);

/// Writes one HTK feature file frame by frame: the header is completed by finish(), so the frame count need
/// not be known in advance. The file is written as `<path>.partial` and renamed by finish() (the Env's
/// atomic commit); destroyed without finish(), it removes the partial file.
class HtkWriter {
 public:
  /// `a`/`b` (dim values each) are the compression vectors; required iff options.compressed. `durable`:
  /// finish() syncs the file and its folder (false: the caller makes many files durable at once).
  HtkWriter(std::string path, size_t dim, const HtkWriteOptions& options, std::vector<float> a = {},
            std::vector<float> b = {}, bool durable = true);
  ~HtkWriter();
  HtkWriter(const HtkWriter&) = delete;
  HtkWriter& operator=(const HtkWriter&) = delete;

  /// Appends `count` frames (count x dim floats). Throws IoError, UsageError (too many frames).
  void append(const float* frames, size_t count);
  uint64_t frames() const { return frames_; }
  /// Writes the frame count into the header, closes and renames the file. Throws IoError.
  void finish();

 private:
  void write(const void* data, size_t bytes);
  std::string path_;
  size_t dim_;
  HtkWriteOptions options_;
  std::vector<float> a_, b_;
  std::unique_ptr<core::OutputFile> file_;  // the Env's atomic writer
  uint64_t frames_ = 0;
  bool swap_ = false;
  std::vector<unsigned char> buffer_;
};

/// write_htk_file(), with `durable` as HtkWriter's.
void write_file(const std::string& path, const float* frames, size_t num_frames, size_t dim,
                const HtkWriteOptions& options, bool durable);

/// Widens the per-dimension range [lo[k], hi[k]] (start: +inf, -inf) to `count` frames of `dim` values, for
/// compression_vectors. Throws UsageError on a NaN: HTK's 16-bit compression has no code for it.
void widen_range(const float* frames, size_t count, size_t dim, std::vector<float>& lo,
                 std::vector<float>& hi);

/// HTK's compression vectors for values in [lo[k], hi[k]] per dimension: x = (v + B) / A, v in ±32767 (a
/// dimension without values, lo > hi, encodes as 0). Throws UsageError where a range is infinite or wider
/// than a float: its values would all decode as NaN.
void compression_vectors(const std::vector<float>& lo, const std::vector<float>& hi, std::vector<float>& a,
                         std::vector<float>& b);

}  // namespace cntkio::htk
