// A buffered output file written under `<path>.partial` and renamed to `path` only when complete, so a
// failed or interrupted conversion never leaves a truncated file under the final name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cntkio::cbf {

class OutputFile {
 public:
  /// Creates (truncates) `<path>.partial`. Throws IoError.
  explicit OutputFile(std::string path);
  /// Removes the partial file unless commit() succeeded.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const void* data, size_t size);
  void write(const std::vector<unsigned char>& bytes) { write(bytes.data(), bytes.size()); }
  /// Bytes written so far (the offset of the next byte).
  uint64_t position() const { return position_; }
  /// Flushes, closes and renames the partial file to the final path. Throws IoError.
  void commit();
  const std::string& path() const { return path_; }
  const std::string& partial_path() const { return partial_; }

 private:
  void flush();

  std::string path_;
  std::string partial_;
  int fd_ = -1;
  std::vector<unsigned char> buffer_;
  size_t used_ = 0;
  uint64_t position_ = 0;
  bool committed_ = false;
};

}  // namespace cntkio::cbf
