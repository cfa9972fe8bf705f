// Read-only memory mapping of a whole file. Every file cntkio reads goes through here or through
// open_for_read(), so error reporting (path + errno) is uniform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cntkio::core {

class MappedFile {
 public:
  /// Maps `path` read-only. Throws IoError. An empty file maps to an empty view.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  /// Modification time (seconds since the epoch) when the file was mapped.
  int64_t mtime() const { return mtime_; }

 private:
  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  int64_t mtime_ = 0;
};

/// Modification time in seconds of `path`, or -1 if it does not exist.
int64_t file_mtime(const std::string& path);

/// 1-based line and column of byte `offset` in `text` (counting LF bytes before it).
struct LineColumn {
  uint64_t line = 1;
  uint64_t column = 1;
};
LineColumn line_column_at(std::string_view text, size_t offset);

}  // namespace cntkio::core
