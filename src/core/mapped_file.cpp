#include "core/mapped_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cntkio/errors.hpp"
#include "core/env/sigbus_guard.hpp"

namespace cntkio::core {
namespace {

// Files up to this size are read into memory: a mapping costs a guard slot and a kernel mapping.
constexpr uint64_t kReadIntoMemoryBelow = 64 * 1024;
constexpr size_t kReadBlock = 16 << 20;

}  // namespace

MappedFile::MappedFile(const std::string& path, const std::string& open_failure)
    : file_(InputFile::open(path, open_failure)) {
  size_ = static_cast<size_t>(file_.size());
  if (size_ == 0) return;
  if (size_ > kReadIntoMemoryBelow) {
    mapping_ = file_.file().map();
    if (mapping_) {
      data_ = mapping_->data();
      return;
    }
  }
  owned_ = std::make_unique_for_overwrite<char[]>(size_);
  // In blocks: a read that fails names the range it failed in.
  for (size_t at = 0; at < size_;) {
    const size_t n = std::min(kReadBlock, size_ - at);
    const size_t got = file_.read_at(at, owned_.get() + at, n);
    if (got != n) throw_cut(at + got);
    at += n;
  }
  data_ = owned_.get();
}

MappedFile::~MappedFile() = default;

void MappedFile::throw_cut(uint64_t now_size) const {
  throw IoError("the input file was cut while being read: it had " + std::to_string(size_) +
                    " bytes when opened and now has " + std::to_string(now_size) +
                    " (another process truncated or rewrote it); nothing read from it since is used",
                path(), 0);
}

void MappedFile::check_intact() const {
  if (!mapping_) return;
  if (mapping_->intact()) {
    // A cut inside a page faults nowhere: the rest of the page that holds the new end reads as zeros without
    // a SIGBUS, so the guard cannot see it. The file's size can (one fstat).
    const uint64_t now = file_.current_size();
    if (now < size_) throw_cut(now);
    return;
  }
  const std::string failure = mapping_->failure();
  if (!failure.empty()) {
    throw IoError(
        "reading the mapped file failed (" + failure + "); nothing read from it since is used: file", path(),
        0);
  }
  uint64_t now = 0;
  try {
    now = file_.current_size();
  } catch (const IoError&) {
  }
  throw_cut(now);
}

void MappedFile::check_covers(uint64_t end) const {
  check_intact();
  if (!mapping_) return;
  const uint64_t now = file_.current_size();
  if (now < end) throw_cut(now);
}

int64_t file_mtime(const std::string& path) {
  try {
    return Env::current()->file_identity(path).mtime_ns / 1000000000;
  } catch (const IoError&) {
    return -1;
  }
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

namespace testing {
uint64_t guarded_faults() {
  return env::guarded_faults();
}
}  // namespace testing

}  // namespace cntkio::core
