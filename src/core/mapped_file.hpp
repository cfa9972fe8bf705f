// Read-only memory view of a whole input file, opened through input_file.hpp (so through the Env): mapped
// where the Env can map (the POSIX Env, guarded against SIGBUS when the file is cut while mapped:
// core/env/sigbus_guard.hpp), read into memory otherwise and for small files.
//
// Readers call check_intact() once they have used what they read (after an index pass, a chunk's parse, a
// minibatch's packing): a mapping whose file was cut then throws an IoError naming the file, so the zeros
// the guard showed never reach a minibatch. docs/robustness.md describes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/input_file.hpp"

namespace cntkio::core {

class MappedFile {
 public:
  /// Maps `path` read-only (small files, and files of an Env that cannot map, are read into memory instead).
  /// Throws IoError; `open_failure` begins its text when the file cannot be opened. An empty file maps to an
  /// empty view.
  explicit MappedFile(const std::string& path, const std::string& open_failure = "cannot open input file");
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }
  const std::string& path() const { return file_.path(); }
  /// Modification time (whole seconds since the epoch) when the file was mapped.
  int64_t mtime() const { return file_.mtime_seconds(); }
  /// The file's identity when it was mapped.
  const FileIdentity& identity() const { return file_.identity(); }

  /// Throws IoError when bytes of the mapping were found missing or the file is now shorter than when mapped
  /// (it was cut while mapped): every byte read from view() since the last check may be a zero that the file
  /// never held.
  void check_intact() const;
  /// Throws IoError when the file is now shorter than `end` bytes (a cheap check before reading up to `end`).
  void check_covers(uint64_t end) const;
  /// Tells the mapping that bytes [offset, offset + size) will be read soon (FileMapping::will_need): a
  /// remote file fetches the whole range at once instead of block by block as it is touched. Never throws.
  void will_need(uint64_t offset, uint64_t size) const {
    if (mapping_) mapping_->will_need(offset, size);
  }

 private:
  [[noreturn]] void throw_cut(uint64_t now_size) const;

  InputFile file_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  std::unique_ptr<FileMapping> mapping_;  // null when read into memory
  std::unique_ptr<char[]> owned_;         // the bytes of a file read into memory instead of mapped
};

/// Modification time in seconds of `path`, or -1 if it does not exist.
int64_t file_mtime(const std::string& path);

/// 1-based line and column of byte `offset` in `text` (counting LF bytes before it).
struct LineColumn {
  uint64_t line = 1;
  uint64_t column = 1;
};
LineColumn line_column_at(std::string_view text, size_t offset);

namespace testing {
/// Mappings the SIGBUS guard has patched with zeros since the process started (for tests).
uint64_t guarded_faults();
}  // namespace testing

}  // namespace cntkio::core
