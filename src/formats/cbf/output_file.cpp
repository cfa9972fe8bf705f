#include "formats/cbf/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cntkio/errors.hpp"
#include "core/output_path.hpp"

namespace cntkio::cbf {
namespace {
constexpr size_t kBufferSize = 1 << 20;
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)), partial_(path_ + ".partial") {
  core::check_output_path(path_);
  fd_ = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
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

}  // namespace cntkio::cbf
