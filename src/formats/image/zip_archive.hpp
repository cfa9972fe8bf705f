// Read-only access to the entries of a zip archive through libzip (CNTK's ZipByteReader, spec image.md §3.3).
//
// Entry names are matched exactly (case-sensitive, '/'-separated) once, when the archive is indexed; reads
// then go by entry index. Open libzip handles are pooled, so reads from several threads do not share one.
//
// Thread-safety: read() may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

struct zip;

namespace cntkio::image {

class ZipArchive {
 public:
  struct Entry {
    uint64_t index = 0;
    uint64_t size = 0;
  };

  /// Opens `path`; throws Error "Failed to open <path>, zip library error: <message>".
  explicit ZipArchive(std::string path);
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  const std::string& path() const { return path_; }
  /// Every entry of the archive by exact name.
  const std::map<std::string, Entry>& entries() const { return entries_; }
  /// The uncompressed bytes of `entry`. Throws Error if libzip fails or the size differs.
  std::vector<unsigned char> read(const Entry& entry) const;

 private:
  zip* acquire() const;
  void release(zip* handle) const;

  std::string path_;
  std::map<std::string, Entry> entries_;
  mutable std::mutex mutex_;
  mutable std::vector<zip*> pool_;
};

}  // namespace cntkio::image
