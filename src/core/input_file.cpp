#include "core/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "cntkio/errors.hpp"

namespace cntkio::core {
namespace {

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

}  // namespace

void check_input_path(std::string_view path) {
  if (path.empty()) throw UsageError("An input path is empty.");
  const size_t nul = path.find('\0');
  if (nul != std::string_view::npos) {
    throw UsageError("The input path '" + std::string(path.substr(0, nul)) + "\\0" +
                     std::string(path.substr(nul + 1)) + "' holds a NUL byte at position " +
                     std::to_string(nul) + "; a path cannot contain one.");
  }
}

InputFile InputFile::open(const std::string& path, const std::string& open_failure) {
  check_input_path(path);
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever before fstat could refuse it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw IoError(open_failure, path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw IoError(open_failure, path, e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError(open_failure + " (" + kind_of(st.st_mode) + ")", path, S_ISDIR(st.st_mode) ? EISDIR : 0);
  }
  // Regular files never block, but clear the flag anyway: reads must not return EAGAIN.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  InputFile file;
  file.fd_ = fd;
  file.path_ = path;
  file.identity_ = identity_of(st);
  return file;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

InputFile::InputFile(InputFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), identity_(other.identity_) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    identity_ = other.identity_;
  }
  return *this;
}

size_t InputFile::read_at(uint64_t offset, void* buffer, size_t n) const {
  char* out = static_cast<char*>(buffer);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw IoError("cannot read bytes " + std::to_string(offset + done) + ".." + std::to_string(offset + n) +
                        " of input file",
                    path_, errno);
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

void InputFile::read_exact_at(uint64_t offset, void* buffer, size_t n) const {
  const size_t got = read_at(offset, buffer, n);
  if (got != n) {
    throw IoError("the input file ended at byte " + std::to_string(offset + got) + " while reading bytes " +
                      std::to_string(offset) + ".." + std::to_string(offset + n) +
                      " (it is shorter than when it was opened, or was cut while being read)",
                  path_, 0);
  }
}

uint64_t InputFile::current_size() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw IoError("cannot stat input file", path_, errno);
  return static_cast<uint64_t>(st.st_size);
}

std::string InputFile::read_all(uint64_t max_bytes) const {
  std::string out;
  const uint64_t expected = identity_.size;
  if (expected > max_bytes) {
    throw IoError("the input file holds " + std::to_string(expected) + " bytes, more than the " +
                      std::to_string(max_bytes) + " accepted for it",
                  path_, EFBIG);
  }
  out.resize(static_cast<size_t>(expected));
  size_t got = read_at(0, out.data(), out.size());
  out.resize(got);
  // The file may have grown since it was opened: read on to its end.
  char block[65536];
  while (true) {
    const size_t n = read_at(out.size(), block, sizeof block);
    if (n == 0) break;
    if (out.size() + n > max_bytes) {
      throw IoError(
          "the input file holds more than the " + std::to_string(max_bytes) + " bytes accepted for it", path_,
          EFBIG);
    }
    out.append(block, n);
  }
  return out;
}

std::string read_input_file(const std::string& path, const std::string& open_failure, uint64_t max_bytes) {
  return InputFile::open(path, open_failure).read_all(max_bytes);
}

void check_input_file(const std::string& path, const std::string& open_failure) {
  (void)InputFile::open(path, open_failure);
}

}  // namespace cntkio::core
