#include "core/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cntkio/errors.hpp"

namespace cntkio::core {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw IoError("cannot open input file", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw IoError("cannot stat input file", path, e);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw IoError("cannot read input file (it is a directory)", path, EISDIR);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError("cannot map input file (not a regular file: a pipe, socket or device)", path, 0);
  }
  mtime_ = static_cast<int64_t>(st.st_mtime);
  size_ = static_cast<size_t>(st.st_size);
  identity_.device = static_cast<uint64_t>(st.st_dev);
  identity_.inode = static_cast<uint64_t>(st.st_ino);
  identity_.size = static_cast<uint64_t>(st.st_size);
  identity_.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  identity_.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw IoError("cannot map input file", path, e);
    }
    ::madvise(p, size_, MADV_SEQUENTIAL);
    data_ = static_cast<const char*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
}

int64_t file_mtime(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_mtime);
}

LineColumn line_column_at(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  LineColumn lc;
  size_t line_start = 0;
  const char* base = text.data();
  const char* p = base;
  const char* end = base + offset;
  while (p < end) {
    const void* hit = std::memchr(p, '\n', static_cast<size_t>(end - p));
    if (hit == nullptr) break;
    ++lc.line;
    p = static_cast<const char*>(hit) + 1;
    line_start = static_cast<size_t>(p - base);
  }
  lc.column = offset - line_start + 1;
  return lc;
}

}  // namespace cntkio::core
