// A buffered output file written under a partial name and renamed to its path only when complete, so a
// failed or interrupted conversion never leaves a truncated file under the final name, and a failed one
// leaves nothing at all. A thin handle on the Env's WritableFile (cntkio/env.hpp), which does the atomic
// commit (write, fsync, rename, fsync the folder) for every writer of cntkio.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cntkio/env.hpp"
#include "core/output_path.hpp"

namespace cntkio::core {

class OutputFile {
 public:
  /// Creates `<path>.partial`, or `<path>.partial.XXXXXX` when that name is taken (it is never replaced,
  /// nor removed: it is not this writer's), through Env::current(). `options` may name the temporary
  /// instead. Throws UsageError for a path with a NUL byte or one that names something other than a regular
  /// file (core::check_output_path), IoError.
  explicit OutputFile(const std::string& path, const WritableFileOptions& options = {});
  /// Removes the partial file unless commit() succeeded.
  ~OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const void* data, size_t size) { file_->append(data, size); }
  void write(const std::vector<unsigned char>& bytes) { write(bytes.data(), bytes.size()); }
  /// Overwrites bytes already written (a header completed last). Throws IoError.
  void write_at(uint64_t offset, const void* data, size_t size) { file_->write_at(offset, data, size); }
  /// Writes the buffered bytes to the partial file (which can then be read back). Throws IoError.
  void flush() { file_->flush(); }
  /// Bytes written so far (the offset of the next byte).
  uint64_t position() const { return file_->position(); }
  /// Flushes, syncs, closes and renames the partial file to the final path. Throws IoError (the partial
  /// file is then removed).
  void commit() { file_->commit(); }
  /// Removes the partial file now; the final path is not touched.
  void abandon() noexcept { file_->abandon(); }
  const std::string& path() const { return file_->path(); }
  const std::string& partial_path() const { return file_->temp_path(); }

 private:
  std::unique_ptr<WritableFile> file_;
};

}  // namespace cntkio::core
