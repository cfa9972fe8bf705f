// Read-only memory mapping of a whole file. Every file cntkio reads goes through here or through
// open_for_read(), so error reporting (path + errno) is uniform.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cntkio::core {

/// What tells one version of a file from another: the same device, inode, size and modification and change
/// times (nanoseconds) mean the same bytes, as far as the file system lets a reader know.
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  auto operator<=>(const FileIdentity&) const = default;
};

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
  /// The file's identity when it was mapped.
  const FileIdentity& identity() const { return identity_; }

 private:
  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  int64_t mtime_ = 0;
  FileIdentity identity_;
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
