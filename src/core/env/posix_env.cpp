// The POSIX Env (Env::default_env()): local files read with pread and mapped with mmap under the SIGBUS
// guard, written under a temporary name and renamed into place.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "cntkio/env.hpp"
#include "cntkio/errors.hpp"
#include "core/env/sigbus_guard.hpp"
#include "core/input_file.hpp"
#include "core/output_path.hpp"

namespace cntkio {
namespace {

constexpr size_t kWriteBufferBytes = 1 << 20;

FileIdentity identity_of(const struct stat& st) {
  FileIdentity id;
  id.device = static_cast<uint64_t>(st.st_dev);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  id.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  return id;
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "it is a directory";
  if (S_ISFIFO(mode)) return "it is a FIFO, not a regular file";
  if (S_ISSOCK(mode)) return "it is a socket, not a regular file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "it is a device, not a regular file";
  return "it is not a regular file";
}

// Opens a regular file for reading; IoError beginning with `open_failure` otherwise.
int open_regular(const std::string& path, std::string_view open_failure, FileIdentity& identity) {
  core::check_input_path(path);
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever before fstat could refuse it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw IoError(std::string(open_failure), path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw IoError(std::string(open_failure), path, e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError(std::string(open_failure) + " (" + kind_of(st.st_mode) + ")", path,
                  S_ISDIR(st.st_mode) ? EISDIR : 0);
  }
  // Regular files never block, but clear the flag anyway: reads must not return EAGAIN.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  identity = identity_of(st);
  core::note_input(identity.device, identity.inode, path);
  return fd;
}

class PosixMapping final : public FileMapping {
 public:
  PosixMapping(const char* data, size_t size, int slot) : data_(data), size_(size), slot_(slot) {}
  ~PosixMapping() override {
    core::env::unregister_mapping(slot_);
    ::munmap(const_cast<char*>(data_), size_);
  }
  const char* data() const override { return data_; }
  size_t size() const override { return size_; }
  bool intact() const override { return !core::env::mapping_faulted(slot_); }
  void will_need(uint64_t offset, uint64_t size) const override {
    if (offset >= size_ || size == 0) return;
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t start = offset / page * page;
    const uint64_t end = std::min<uint64_t>(size_, offset + size);
    ::madvise(const_cast<char*>(data_) + start, end - start, MADV_WILLNEED);
  }

 private:
  const char* data_;
  size_t size_;
  int slot_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, std::string_view open_failure) : path_(std::move(path)) {
    fd_ = open_regular(path_, open_failure, identity_);
  }
  ~PosixRandomAccessFile() override { ::close(fd_); }
  const std::string& path() const override { return path_; }
  const FileIdentity& identity() const override { return identity_; }

  size_t read_at(uint64_t offset, void* buffer, size_t n) const override {
    char* out = static_cast<char*>(buffer);
    size_t done = 0;
    while (done < n) {
      const ssize_t got = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0) {
        if (errno == EINTR) continue;
        throw IoError("cannot read bytes " + std::to_string(offset + done) + ".." +
                          std::to_string(offset + n) + " of input file",
                      path_, errno);
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

  uint64_t current_size() const override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw IoError("cannot stat input file", path_, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  std::unique_ptr<FileMapping> map() const override {
    const auto size = static_cast<size_t>(identity_.size);
    if (size == 0) return nullptr;
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (p == MAP_FAILED) throw IoError("cannot map input file", path_, errno);
    ::madvise(p, size, MADV_SEQUENTIAL);
    const int slot = core::env::register_mapping(static_cast<const char*>(p), size);
    if (slot < 0) {  // every guard slot is taken: the caller reads the file instead, where a cut cannot fault
      ::munmap(p, size);
      return nullptr;
    }
    return std::make_unique<PosixMapping>(static_cast<const char*>(p), size, slot);
  }

 private:
  std::string path_;
  int fd_ = -1;
  FileIdentity identity_;
};

class PosixSequentialFile final : public SequentialFile {
 public:
  explicit PosixSequentialFile(std::string path) : path_(std::move(path)) {
    FileIdentity ignored;
    fd_ = open_regular(path_, "cannot open input file", ignored);
  }
  ~PosixSequentialFile() override { ::close(fd_); }
  const std::string& path() const override { return path_; }
  size_t read(void* buffer, size_t n) override {
    while (true) {
      const ssize_t got = ::read(fd_, buffer, n);
      if (got >= 0) {
        position_ += static_cast<uint64_t>(got);
        return static_cast<size_t>(got);
      }
      if (errno != EINTR) {
        throw IoError("cannot read bytes " + std::to_string(position_) + ".." +
                          std::to_string(position_ + n) + " of input file",
                      path_, errno);
      }
    }
  }
  void skip(uint64_t n) override {
    const off_t at = ::lseek(fd_, static_cast<off_t>(n), SEEK_CUR);
    if (at < 0) throw IoError("cannot seek in input file", path_, errno);
    position_ = static_cast<uint64_t>(at);
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t position_ = 0;
};

void sync_directory(const std::string& folder, bool whole_storage) {
  const std::string dir = folder.empty() ? std::string(".") : folder;
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw IoError("cannot open the folder to sync it", dir, errno);
  // Some file systems cannot sync a folder (EINVAL): the rename is then as durable as they make it.
  const int rc = whole_storage ? ::syncfs(fd) : ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0 && e != EINVAL && e != EROFS) throw IoError("cannot sync the folder", dir, e);
}

void sync_folder_of(const std::string& path) {
  sync_directory(std::filesystem::path(path).parent_path().string(), false);
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, const WritableFileOptions& options)
      : path_(std::move(path)), durable_(options.durable) {
    core::check_output_name(path_);
    core::check_output_path(path_, options.temp_path);
    if (options.temp_path.empty()) core::check_not_an_input(path_);
    guard_inputs_ = options.temp_path.empty();
    if (!options.temp_path.empty()) {
      temp_ = options.temp_path;
      core::check_output_name(temp_);
      fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    } else {
      temp_ = path_ + ".partial";
      // O_EXCL: a file already there (another run's, or the user's) is not ours to replace or remove.
      fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd_ < 0 && errno == EEXIST) {
        std::string unique = temp_ + ".XXXXXX";
        fd_ = ::mkostemp(unique.data(), O_CLOEXEC);
        if (fd_ >= 0) {
          temp_ = std::move(unique);
          // mkostemp creates 0600: give the mode the first-choice name gets under the usual umask.
          ::fchmod(fd_, 0644);
        }
      }
    }
    if (fd_ < 0) throw IoError("cannot create output file", temp_, errno);
  }
  ~PosixWritableFile() override {
    if (!committed_) abandon();
  }

  const std::string& path() const override { return path_; }
  const std::string& temp_path() const override { return temp_; }
  uint64_t position() const override { return written_ + used_; }

  void append(const void* data, size_t n) override {
    if (n == 0) return;  // data may be null then (an empty vector's data()): memcpy must not see it
    check_open();
    const auto* bytes = static_cast<const unsigned char*>(data);
    // Allocated on first use and not cleared: a writer of many small files pays only for what it writes.
    if (!buffer_) buffer_ = std::make_unique_for_overwrite<unsigned char[]>(kWriteBufferBytes);
    if (used_ + n > kWriteBufferBytes) flush();
    if (n >= kWriteBufferBytes) {
      write_fully(bytes, n, written_);
      written_ += n;
    } else {
      std::memcpy(buffer_.get() + used_, bytes, n);
      used_ += n;
    }
  }

  void write_at(uint64_t offset, const void* data, size_t n) override {
    if (offset + n > position()) {
      throw UsageError("WritableFile::write_at: bytes " + std::to_string(offset) + ".." +
                       std::to_string(offset + n) + " lie past the " + std::to_string(position()) +
                       " bytes written to '" + temp_ + "'.");
    }
    check_open();
    flush();
    write_fully(static_cast<const unsigned char*>(data), n, offset);
  }

  void flush() override {
    check_open();
    if (used_ == 0) return;
    write_fully(buffer_.get(), used_, written_);
    written_ += used_;
    used_ = 0;
  }

  void sync() override {
    flush();
    if (::fsync(fd_) != 0) throw IoError("cannot sync output file", temp_, errno);
  }

  void commit() override {
    try {
      if (durable_) {
        sync();
      } else {
        flush();
      }
      const int fd = std::exchange(fd_, -1);
      if (::close(fd) != 0) throw IoError("cannot write output file", temp_, errno);
      if (guard_inputs_) core::check_not_an_input(path_);  // inputs opened since the output was
      if (std::rename(temp_.c_str(), path_.c_str()) != 0)
        throw IoError("cannot rename output file to", path_, errno);
    } catch (...) {
      abandon();
      throw;
    }
    committed_ = true;
    if (durable_) sync_folder_of(path_);
  }

  void abandon() noexcept override {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
    if (!committed_ && !removed_) ::unlink(temp_.c_str());
    removed_ = true;
  }

 private:
  void check_open() const {
    if (fd_ < 0) throw IoError("cannot write output file (it was closed)", temp_, EBADF);
  }
  void write_fully(const unsigned char* p, size_t n, uint64_t offset) {
    while (n > 0) {
      const ssize_t got = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        throw IoError("cannot write bytes " + std::to_string(offset) + ".." + std::to_string(offset + n) +
                          " of output file",
                      temp_, got < 0 ? errno : EIO);
      }
      p += got;
      n -= static_cast<size_t>(got);
      offset += static_cast<uint64_t>(got);
    }
  }

  std::string path_;
  std::string temp_;
  bool durable_ = true;
  int fd_ = -1;
  std::unique_ptr<unsigned char[]> buffer_;  // kWriteBufferBytes, allocated by the first append
  size_t used_ = 0;                          // bytes in buffer_, after the written_ bytes in the file
  uint64_t written_ = 0;                     // bytes handed to the file
  bool committed_ = false;
  bool removed_ = false;
  bool guard_inputs_ = false;
};

class PosixEnv final : public Env {
 public:
  std::unique_ptr<RandomAccessFile> new_random_access_file(const std::string& path,
                                                           std::string_view open_failure) override {
    return std::make_unique<PosixRandomAccessFile>(path, open_failure);
  }
  std::unique_ptr<SequentialFile> new_sequential_file(const std::string& path) override {
    return std::make_unique<PosixSequentialFile>(path);
  }
  std::unique_ptr<WritableFile> new_writable_file(const std::string& path,
                                                  const WritableFileOptions& options) override {
    return std::make_unique<PosixWritableFile>(path, options);
  }
  bool file_exists(const std::string& path) override {
    struct stat st {};
    return path.find('\0') == std::string::npos && ::lstat(path.c_str(), &st) == 0;
  }
  FileIdentity file_identity(const std::string& path) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw IoError("cannot stat", path, errno);
    return identity_of(st);
  }
  std::vector<std::string> list_dir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) throw IoError("cannot list folder", dir, errno);
    std::vector<std::string> names;
    while (const dirent* entry = ::readdir(d)) {
      const std::string_view name(entry->d_name);
      if (name != "." && name != "..") names.emplace_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }
  void remove_file(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) throw IoError("cannot remove file", path, errno);
  }
  void rename_file(const std::string& from, const std::string& to) override {
    if (std::rename(from.c_str(), to.c_str()) != 0)
      throw IoError("cannot rename '" + from + "' to", to, errno);
  }
  bool create_dir(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0777) == 0) return true;
    const int e = errno;
    if (e == EEXIST && is_dir(dir)) return false;
    throw IoError("cannot create folder", dir, e);
  }
  void remove_dir(const std::string& dir) override {
    if (::rmdir(dir.c_str()) != 0) throw IoError("cannot remove folder", dir, errno);
  }
  bool is_dir(const std::string& path) override {
    struct stat st {};
    return path.find('\0') == std::string::npos && ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
  void sync_folder(const std::string& dir) override { sync_directory(dir, false); }
  void sync_storage(const std::string& path) override {
    std::error_code ec;
    const bool is_dir = std::filesystem::is_directory(path, ec);
    sync_directory(is_dir ? path : std::filesystem::path(path).parent_path().string(), true);
  }
};

}  // namespace

std::shared_ptr<Env> make_posix_env() {
  return std::make_shared<PosixEnv>();
}

}  // namespace cntkio
