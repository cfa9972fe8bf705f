#include "formats/image/zip_archive.hpp"

#include <zip.h>

#include "cntkio/errors.hpp"

namespace cntkio::image {
namespace {

zip* open_archive(const std::string& path) {
  int code = 0;
  zip* handle = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (handle == nullptr) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    SourceLocation where;
    where.file = path;
    throw FormatError("Failed to open " + path + ", zip library error: " + message, where);
  }
  return handle;
}

}  // namespace

ZipArchive::ZipArchive(std::string path) : path_(std::move(path)) {
  zip* handle = open_archive(path_);
  const zip_int64_t count = zip_get_num_entries(handle, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (zip_stat_index(handle, static_cast<zip_uint64_t>(i), 0, &stat) != 0) continue;
    if ((stat.valid & ZIP_STAT_NAME) == 0 || (stat.valid & ZIP_STAT_SIZE) == 0) continue;
    entries_.emplace(stat.name, Entry{static_cast<uint64_t>(i), static_cast<uint64_t>(stat.size)});
  }
  pool_.push_back(handle);
}

ZipArchive::~ZipArchive() {
  for (zip* handle : pool_) zip_discard(handle);
}

zip* ZipArchive::acquire() const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!pool_.empty()) {
      zip* handle = pool_.back();
      pool_.pop_back();
      return handle;
    }
  }
  return open_archive(path_);
}

void ZipArchive::release(zip* handle) const {
  std::lock_guard<std::mutex> lock(mutex_);
  pool_.push_back(handle);
}

std::vector<unsigned char> ZipArchive::read(const Entry& entry) const {
  zip* handle = acquire();
  std::vector<unsigned char> bytes(entry.size);
  std::string failure;
  zip_file_t* file = zip_fopen_index(handle, entry.index, 0);
  if (file == nullptr) {
    failure = zip_strerror(handle);
  } else {
    const zip_int64_t got = zip_fread(file, bytes.data(), bytes.size());
    if (got < 0) {
      failure = zip_file_strerror(file);
    } else if (static_cast<uint64_t>(got) != entry.size) {
      failure = "read " + std::to_string(got) + " bytes, expected " + std::to_string(entry.size);
    }
    zip_fclose(file);
  }
  release(handle);
  if (!failure.empty()) {
    SourceLocation where;
    where.file = path_;
    throw FormatError("Cannot read entry " + std::to_string(entry.index) + " of " + path_ + ": " + failure,
                      where);
  }
  return bytes;
}

}  // namespace cntkio::image
