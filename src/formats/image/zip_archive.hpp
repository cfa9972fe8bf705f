// Read-only access to the entries of a zip archive through libzip (CNTK's ZipByteReader, spec image.md §3.3).
//
// The archive is opened through core::InputFile (a FIFO, device or directory is refused) and libzip reads it
// through a source over that file, never by path. Entry names are matched exactly (case-sensitive,
// '/'-separated) once, when the archive is indexed; reads then go by entry index. An entry is inflated only
// when its declared size keeps within the caller's limit, and never beyond its declared size. Open libzip
// handles are pooled, so reads from several threads do not share one.
//
// Thread-safety: read() may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cntkio/errors.hpp"

struct zip;

namespace cntkio::core {
class InputFile;
}

namespace cntkio::image {

class ZipArchive {
 public:
  struct Entry {
    uint64_t index = 0;
    uint64_t size = 0;  ///< uncompressed size, as the archive's directory declares it
    std::string name;
  };

  /// Opens `path`: IoError "Failed to open <path>" when it cannot be opened or is not a regular file,
  /// FormatError "Failed to open <path>, zip library error: <message>" when libzip cannot read it.
  explicit ZipArchive(std::string path);
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  const std::string& path() const { return path_; }
  /// Every entry of the archive by exact name.
  const std::map<std::string, Entry>& entries() const { return entries_; }
  /// Names that more than one entry has, with how many entries beyond the first (entries() holds the first).
  const std::map<std::string, uint64_t>& duplicates() const { return duplicates_; }
  /// The uncompressed bytes of `entry`. Throws FormatError "<subject> declares N bytes, more than
  /// maxImageBytes = <max_bytes>" (at `where`) before inflating anything when the entry's declared size
  /// exceeds `max_bytes`, and FormatError when libzip fails or the entry inflates to another size than it
  /// declares; IoError (the Env's, naming the byte range) when reading the archive fails.
  std::vector<unsigned char> read(const Entry& entry, uint64_t max_bytes, const std::string& subject,
                                  const SourceLocation& where) const;

 private:
  zip* open_handle() const;
  zip* acquire() const;
  void release(zip* handle) const;

  std::string path_;
  std::shared_ptr<const core::InputFile> file_;
  std::map<std::string, Entry> entries_;
  std::map<std::string, uint64_t> duplicates_;
  mutable std::mutex mutex_;
  mutable std::vector<zip*> pool_;
  mutable std::map<const zip*, void*> sources_;  // each handle's FileSource (zip_archive.cpp)
};

}  // namespace cntkio::image
