// A buffered output file written under a partial name and renamed to its path only when complete, so a
// failed or interrupted conversion never leaves a truncated file under the final name, and a failed one
// leaves nothing at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cntkio::core {

class OutputFile {
 public:
  /// Creates `<path>.partial`, or `<path>.partial.XXXXXX` when that name is taken (it is never replaced,
  /// nor removed: it is not this writer's). Throws UsageError for a path with a NUL byte or one that names
  /// something other than a regular file (core::check_output_path), IoError.
  explicit OutputFile(std::string path);
  /// Removes the partial file unless commit() succeeded.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const void* data, size_t size);
  void write(const std::vector<unsigned char>& bytes) { write(bytes.data(), bytes.size()); }
  /// Writes the buffered bytes to the partial file (which can then be read back). Throws IoError.
  void flush();
  /// Bytes written so far (the offset of the next byte).
  uint64_t position() const { return position_; }
  /// Flushes, closes and renames the partial file to the final path. Throws IoError.
  void commit();
  const std::string& path() const { return path_; }
  const std::string& partial_path() const { return partial_; }

 private:
  std::string path_;
  std::string partial_;
  int fd_ = -1;
  std::vector<unsigned char> buffer_;
  size_t used_ = 0;
  uint64_t position_ = 0;
  bool committed_ = false;
};

/// Throws UsageError when `path` holds a NUL byte: the system would write to the path cut there instead.
void check_output_name(const std::string& path);

}  // namespace cntkio::core
