#include "core/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cntkio/errors.hpp"
#include "core/output_path.hpp"

namespace cntkio::core {
namespace {
constexpr size_t kBufferSize = 1 << 20;
}

void check_output_name(const std::string& path) {
  const size_t nul = path.find('\0');
  if (nul == std::string::npos) return;
  throw UsageError("The output path '" + path.substr(0, nul) + "\\0" + path.substr(nul + 1) +
                   "' holds a NUL byte at position " + std::to_string(nul) + "; a path cannot contain one.");
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)), partial_(path_ + ".partial") {
  check_output_name(path_);
  core::check_output_path(path_);
  // O_EXCL: a file already there (another run's, or the user's) is not ours to replace or remove.
  fd_ = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0 && errno == EEXIST) {
    std::string unique = partial_ + ".XXXXXX";
    fd_ = ::mkostemp(unique.data(), O_CLOEXEC);
    if (fd_ >= 0) {
      partial_ = std::move(unique);
      // mkostemp creates 0600: give the mode the first-choice name gets under the usual umask.
      ::fchmod(fd_, 0644);
    }
  }
  if (fd_ < 0) throw IoError("cannot create output file", partial_, errno);
  buffer_.resize(kBufferSize);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(partial_.c_str());
}

void OutputFile::write(const void* data, size_t size) {
  if (size == 0) return;  // data may be null then (an empty vector's data()): memcpy must not see it
  const auto* bytes = static_cast<const unsigned char*>(data);
  position_ += size;
  if (used_ + size <= buffer_.size()) {
    std::memcpy(buffer_.data() + used_, bytes, size);
    used_ += size;
    return;
  }
  flush();
  if (size >= buffer_.size()) {
    while (size > 0) {
      const ssize_t n = ::write(fd_, bytes, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw IoError("cannot write output file", partial_, n < 0 ? errno : EIO);
      bytes += n;
      size -= static_cast<size_t>(n);
    }
    return;
  }
  std::memcpy(buffer_.data(), bytes, size);
  used_ = size;
}

void OutputFile::flush() {
  const unsigned char* p = buffer_.data();
  size_t left = used_;
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw IoError("cannot write output file", partial_, n < 0 ? errno : EIO);
    p += n;
    left -= static_cast<size_t>(n);
  }
  used_ = 0;
}

void OutputFile::commit() {
  flush();
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw IoError("cannot write output file", partial_, errno);
  if (std::rename(partial_.c_str(), path_.c_str()) != 0)
    throw IoError("cannot rename output file to", path_, errno);
  committed_ = true;
}

}  // namespace cntkio::core
