/// @file
/// The Env: every file cntkio reads or writes is opened, listed, renamed and removed through one object.
///
/// As in LevelDB's design, the Env is the one seam between cntkio and the storage it reads: the POSIX Env
/// (Env::default_env()) reads local files with pread and maps them where a reader wants a mapping, and an Env
/// of another kind (an object store, an in-memory file system, or the fault-injecting Env of the tests)
/// replaces it for the whole process with Env::install(). Readers, the index cache, the writers and the
/// converters all go through Env::current(), so a replacement sees every access.
///
/// Writes are atomic: a WritableFile writes a temporary in the folder of its final name, and commit()
/// flushes it, syncs it, renames it over the final name and syncs the folder. A WritableFile destroyed (or
/// abandon()ed) without a commit removes its temporary, so a failed writer never leaves a partial file under
/// the final name.
///
/// Errors are IoError (path and errno; the byte range where a read is concerned), UsageError for a path that
/// cannot name a file.
///
/// Thread-safety: every member of Env may be called from several threads at once. The const members of
/// RandomAccessFile and FileMapping may be called from several threads at once. A SequentialFile or a
/// WritableFile is used by one thread at a time. Env::install() may be called at any time: files already
/// open keep the Env that opened them; later opens use the new one.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cntkio {

/// What tells one version of a file from another: the same device, inode, size and modification and change
/// times (nanoseconds) mean the same bytes, as far as a local file system lets a reader know. An object store
/// fills `etag` (and size, mtime) instead of device and inode.
struct FileIdentity {
  uint64_t device = 0;   ///< the device holding the file (0 where the backend has none)
  uint64_t inode = 0;    ///< its inode on that device (0 where the backend has none)
  uint64_t size = 0;     ///< its size in bytes
  int64_t mtime_ns = 0;  ///< its modification time, nanoseconds since the epoch
  int64_t ctime_ns = 0;  ///< its change time (metadata too), nanoseconds since the epoch
  std::string etag;      ///< a version tag of the backend (HTTP ETag); empty for local files
  /// Identities compare member by member: equal identities mean the same version of a file.
  auto operator<=>(const FileIdentity&) const = default;
};

/// A read-only view of a whole file in memory, valid while this object lives.
class FileMapping {
 public:
  virtual ~FileMapping() = default;
  /// The first byte of the file.
  virtual const char* data() const = 0;
  /// The bytes mapped: the file's size when it was opened.
  virtual size_t size() const = 0;
  /// False once bytes of the mapping were found missing (the file was cut while mapped: the POSIX Env then
  /// shows zeros there instead of raising SIGBUS, docs/robustness.md): what was read from it may be wrong.
  virtual bool intact() const = 0;
  /// Why the mapping is not intact, where the backend knows more than "the file was cut" (a remote block
  /// that could not be fetched: the IoError's text); empty otherwise.
  virtual std::string failure() const { return {}; }
  /// A hint that bytes [offset, offset + size) will be read soon (a chunk about to be parsed): a backend may
  /// start bringing them in at once (POSIX: MADV_WILLNEED; remote: the GETs for the whole range). Never
  /// throws; the default does nothing.
  virtual void will_need(uint64_t offset, uint64_t size) const {
    (void)offset;
    (void)size;
  }
};

/// A file open for positioned reads.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  /// The path it was opened with.
  virtual const std::string& path() const = 0;
  /// Its identity when it was opened.
  virtual const FileIdentity& identity() const = 0;
  /// Its size in bytes when it was opened.
  uint64_t size() const { return identity().size; }
  /// Reads up to `n` bytes at `offset` into `buffer`; fewer only where the file ends. Throws IoError naming
  /// the byte range.
  virtual size_t read_at(uint64_t offset, void* buffer, size_t n) const = 0;
  /// The file's size now (it may have changed since it was opened). Throws IoError.
  virtual uint64_t current_size() const = 0;
  /// A mapping of the whole file, or nullptr where the backend cannot map (the caller then reads it with
  /// read_at). Throws IoError.
  virtual std::unique_ptr<FileMapping> map() const { return nullptr; }
};

/// A file open for reading from start to end.
class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  /// The path it was opened with.
  virtual const std::string& path() const = 0;
  /// Reads up to `n` bytes into `buffer`: 0 only at the end of the file. Throws IoError.
  virtual size_t read(void* buffer, size_t n) = 0;
  /// Skips `n` bytes (past the end: to the end). Throws IoError.
  virtual void skip(uint64_t n) = 0;
};

/// How new_writable_file() names its temporary.
struct WritableFileOptions {
  /// The temporary's name (a path in the final name's folder). Empty: `<path>.partial`, or
  /// `<path>.partial.XXXXXX` when that name is taken (a file that is there is never replaced nor removed:
  /// it is not this writer's). A name given here is the caller's own: a file there is replaced.
  std::string temp_path;
  /// Sync the file before the rename and the folder after it. False: the rename alone, for files made
  /// durable together afterwards (Env::sync_storage(), then Env::sync_folder()) or scratch files.
  bool durable = true;
};

/// A file being written under a temporary name, renamed to its final name by commit().
class WritableFile {
 public:
  /// Removes the temporary unless commit() succeeded.
  virtual ~WritableFile() = default;
  /// The final name.
  virtual const std::string& path() const = 0;
  /// Where the bytes are until commit() (the file may be read there once flush()ed).
  virtual const std::string& temp_path() const = 0;
  /// Appends `n` bytes (buffered). Throws IoError.
  virtual void append(const void* data, size_t n) = 0;
  /// Overwrites `n` bytes at `offset`, which must lie within what was appended (a header completed last).
  /// Throws IoError, UsageError past the end.
  virtual void write_at(uint64_t offset, const void* data, size_t n) = 0;
  /// Bytes appended so far.
  virtual uint64_t position() const = 0;
  /// Hands the buffered bytes to the backend (the temporary then holds them). Throws IoError.
  virtual void flush() = 0;
  /// flush(), then makes the bytes durable (fsync). Throws IoError.
  virtual void sync() = 0;
  /// Completes the file atomically: flush, sync, close, rename the temporary over the final name, sync the
  /// folder. Throws IoError; when it fails before the rename, the temporary is removed and the final name
  /// keeps what it held before (when only the folder's sync fails, the whole file is at its final name).
  virtual void commit() = 0;
  /// Closes and removes the temporary; the final name is not touched. Never throws.
  virtual void abandon() noexcept = 0;
};

/// The file system as cntkio sees it. See the file comment for thread-safety.
class Env {
 public:
  virtual ~Env() = default;

  /// Opens `path` for positioned reads. Only regular files open (a directory, FIFO, socket or device is
  /// refused without blocking). `open_failure` begins the IoError's text when it cannot be opened. Throws
  /// UsageError for an empty path or one with a NUL byte.
  virtual std::unique_ptr<RandomAccessFile> new_random_access_file(const std::string& path,
                                                                   std::string_view open_failure) = 0;
  /// new_random_access_file() with the text "cannot open input file".
  std::unique_ptr<RandomAccessFile> new_random_access_file(const std::string& path) {
    return new_random_access_file(path, "cannot open input file");
  }
  /// Opens `path` for reading from start to end (regular files only, as above). Throws IoError, UsageError.
  virtual std::unique_ptr<SequentialFile> new_sequential_file(const std::string& path) = 0;
  /// Starts writing `path` (see WritableFile). Throws UsageError when `path` holds a NUL byte or names
  /// something the rename would wrongly replace (a directory, device, FIFO, symbolic link), IoError.
  virtual std::unique_ptr<WritableFile> new_writable_file(const std::string& path,
                                                          const WritableFileOptions& options) = 0;
  /// new_writable_file() with the default options (`<path>.partial`, durable).
  std::unique_ptr<WritableFile> new_writable_file(const std::string& path) {
    return new_writable_file(path, WritableFileOptions{});
  }

  /// Whether something exists at `path` (a dangling symbolic link counts). Never throws.
  virtual bool file_exists(const std::string& path) = 0;
  /// The identity of the file at `path` now. Throws IoError (ENOENT when there is none).
  virtual FileIdentity file_identity(const std::string& path) = 0;
  /// The names in folder `dir` (without "." and ".."), sorted. Throws IoError.
  virtual std::vector<std::string> list_dir(const std::string& dir) = 0;
  /// Removes the file `path`. Throws IoError.
  virtual void remove_file(const std::string& path) = 0;
  /// Renames `from` to `to`, replacing a file there. Throws IoError naming `to`.
  virtual void rename_file(const std::string& from, const std::string& to) = 0;
  /// Creates the folder `dir` (its parent must exist). Returns false when a folder is there already. Throws
  /// IoError (EEXIST when something else is there).
  virtual bool create_dir(const std::string& dir) = 0;
  /// Removes the empty folder `dir`. Throws IoError (ENOTEMPTY when it holds anything).
  virtual void remove_dir(const std::string& dir) = 0;
  /// Whether `path` names a folder (a symbolic link is not followed). Never throws.
  virtual bool is_dir(const std::string& path) = 0;
  /// Makes the names in folder `dir` durable (what was created, renamed or removed in it). Throws IoError.
  virtual void sync_folder(const std::string& dir) = 0;
  /// Makes every file written on the storage that holds `path` durable: one call for many files written
  /// with WritableFileOptions::durable = false (POSIX: syncfs). Throws IoError.
  virtual void sync_storage(const std::string& path) = 0;

  /// The paths matching `pattern`, sorted: wildcards (`*`, `?`, `[...]`, as fnmatch) in its last component
  /// only, listed with list_dir(); a pattern without wildcards gives itself when file_exists(). Names
  /// starting with '.' match only a pattern that starts with '.'. Throws IoError.
  std::vector<std::string> glob(const std::string& pattern);

  /// The POSIX Env: local files. Never null; lives for the whole process.
  static std::shared_ptr<Env> default_env();
  /// The Env every part of cntkio uses now: the one installed, else default_env().
  static std::shared_ptr<Env> current();
  /// Makes `env` (nullptr: default_env()) the Env of the process and returns the one it replaces. Files
  /// already open keep the Env that opened them.
  static std::shared_ptr<Env> install(std::shared_ptr<Env> env);

  /// Makes `env` serve every path of the form `scheme://...` that default_env() is given (nullptr: no
  /// longer). The remote part registers `http`, `https` and `s3` at start-up (docs/remote-data.md); other
  /// paths stay local files.
  static void register_scheme(const std::string& scheme, std::shared_ptr<Env> env);
  /// The Env registered for `scheme`, or nullptr.
  static std::shared_ptr<Env> scheme_env(std::string_view scheme);
  /// The scheme of `path` when it is a URL (`https` for `https://host/a`: letters, digits, '+', '-', '.'
  /// before `://`), else empty.
  static std::string_view url_scheme(std::string_view path);
};

/// Installs an Env for the lifetime of this object, then restores the one before (for tests and tools).
class ScopedEnv {
 public:
  /// Installs `env` (Env::install()).
  explicit ScopedEnv(std::shared_ptr<Env> env) : previous_(Env::install(std::move(env))) {}
  /// Installs again the Env that was installed before.
  ~ScopedEnv() { Env::install(previous_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::shared_ptr<Env> previous_;
};

}  // namespace cntkio
