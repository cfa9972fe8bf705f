// Opening input files: the one place where cntkio checks a path and the kind of file it names before
// anything reads it. Every reader (data files, index caches, SCP and MLF lists, map files, images, mean
// files, config files) opens its inputs here, so a directory, FIFO, socket or device is refused with the
// same IoError everywhere instead of reading as empty, blocking forever or never ending (/dev/zero).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cntkio/env.hpp"

namespace cntkio::core {

/// The identity of one version of a file (cntkio/env.hpp).
using FileIdentity = cntkio::FileIdentity;

/// Throws UsageError when `path` cannot name a file: it is empty, or it holds a NUL byte (the operating
/// system would silently cut the path there and open another file).
void check_input_path(std::string_view path);

/// An input file open for reading, opened through the process's Env (Env::current()): only regular files
/// open. Move-only; closes the file when destroyed.
/// Thread-safety: the const members may be called from several threads at once.
class InputFile {
 public:
  /// Opens `path` through Env::current(). `open_failure` begins the IoError's text when the file cannot be
  /// opened or is not a regular file ("cannot open input file", or the text CNTK gives for that kind of
  /// file). Throws UsageError for a path check_input_path() refuses.
  static InputFile open(const std::string& path, const std::string& open_failure = "cannot open input file");

  InputFile() = default;
  explicit InputFile(std::unique_ptr<RandomAccessFile> file) : file_(std::move(file)) {}

  bool is_open() const { return file_ != nullptr; }
  /// The Env's file (for a mapping).
  const RandomAccessFile& file() const { return *file_; }
  const std::string& path() const { return file_->path(); }
  /// Size in bytes when the file was opened.
  uint64_t size() const { return file_->size(); }
  const FileIdentity& identity() const { return file_->identity(); }
  /// Modification time in whole seconds when the file was opened.
  int64_t mtime_seconds() const { return identity().mtime_ns / 1000000000; }

  /// Reads up to `n` bytes at `offset` into `buffer`; fewer only where the file ends. Throws IoError.
  size_t read_at(uint64_t offset, void* buffer, size_t n) const { return file_->read_at(offset, buffer, n); }
  /// Reads exactly `n` bytes at `offset`; IoError naming the byte range when the file ends before.
  void read_exact_at(uint64_t offset, void* buffer, size_t n) const;
  /// The file's size now (it may have changed since it was opened). Throws IoError.
  uint64_t current_size() const { return file_->current_size(); }
  /// Every byte of the file, read to its end (not only to the size it had when opened). IoError when it holds
  /// more than `max_bytes`.
  std::string read_all(uint64_t max_bytes = UINT64_MAX) const;

 private:
  std::unique_ptr<RandomAccessFile> file_;
};

/// The whole content of the regular file `path` (InputFile::open, then read_all).
std::string read_input_file(const std::string& path,
                            const std::string& open_failure = "cannot open input file",
                            uint64_t max_bytes = UINT64_MAX);

/// Throws IoError (as InputFile::open) unless `path` names a regular file that can be opened for reading.
/// For readers that hand the path to a library which opens it itself.
void check_input_file(const std::string& path, const std::string& open_failure = "cannot open input file");

}  // namespace cntkio::core
