#include "formats/image/zip_archive.hpp"

#include <zip.h>

#include <algorithm>
#include <optional>

#include "core/input_file.hpp"

namespace cntkio::image {
namespace {

// A seekable libzip source over an open InputFile: each libzip handle gets its own (with its own offset),
// all of them reading the one file with positional reads.
struct FileSource {
  std::shared_ptr<const core::InputFile> file;
  uint64_t offset = 0;
  zip_error_t error{};
  std::optional<IoError> io_error;  // the failed read behind a libzip error: rethrown as it is
};

zip_int64_t file_source_callback(void* user, void* data, zip_uint64_t length, zip_source_cmd_t command) {
  auto* source = static_cast<FileSource*>(user);
  switch (command) {
    case ZIP_SOURCE_OPEN:
      source->offset = 0;
      return 0;
    case ZIP_SOURCE_READ: {
      const uint64_t size = source->file->size();
      if (source->offset >= size) return 0;
      const uint64_t n = std::min<uint64_t>(length, size - source->offset);
      try {
        const size_t got = source->file->read_at(source->offset, data, static_cast<size_t>(n));
        source->offset += got;
        return static_cast<zip_int64_t>(got);
      } catch (const IoError& e) {
        zip_error_set(&source->error, ZIP_ER_READ, e.error_number());
        if (!source->io_error) source->io_error.emplace(e);
        return -1;
      }
    }
    case ZIP_SOURCE_CLOSE:
      return 0;
    case ZIP_SOURCE_STAT: {
      auto* stat = static_cast<zip_stat_t*>(data);
      zip_stat_init(stat);
      stat->size = source->file->size();
      stat->valid |= ZIP_STAT_SIZE;
      return sizeof(zip_stat_t);
    }
    case ZIP_SOURCE_ERROR:
      return zip_error_to_data(&source->error, data, length);
    case ZIP_SOURCE_FREE:
      zip_error_fini(&source->error);
      delete source;
      return 0;
    case ZIP_SOURCE_SEEK: {
      const zip_int64_t offset =
          zip_source_seek_compute_offset(source->offset, source->file->size(), data, length, &source->error);
      if (offset < 0) return -1;
      source->offset = static_cast<uint64_t>(offset);
      return 0;
    }
    case ZIP_SOURCE_TELL:
      return static_cast<zip_int64_t>(source->offset);
    case ZIP_SOURCE_SUPPORTS:
      return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
                                            ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE,
                                            ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL, ZIP_SOURCE_SUPPORTS, -1);
    default:
      zip_error_set(&source->error, ZIP_ER_OPNOTSUPP, 0);
      return -1;
  }
}

[[noreturn]] void throw_libzip_failure(const std::string& path, zip_error_t& error) {
  std::string message = zip_error_strerror(&error);
  zip_error_fini(&error);
  SourceLocation where;
  where.file = path;
  throw FormatError("Failed to open " + path + ", zip library error: " + message, where);
}

}  // namespace

ZipArchive::ZipArchive(std::string path) : path_(std::move(path)) {
  file_ = std::make_shared<const core::InputFile>(core::InputFile::open(path_, "Failed to open " + path_));
  zip* handle = open_handle();
  const zip_int64_t count = zip_get_num_entries(handle, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (zip_stat_index(handle, static_cast<zip_uint64_t>(i), 0, &stat) != 0) continue;
    if ((stat.valid & ZIP_STAT_NAME) == 0 || (stat.valid & ZIP_STAT_SIZE) == 0) continue;
    const bool added =
        entries_
            .emplace(stat.name, Entry{static_cast<uint64_t>(i), static_cast<uint64_t>(stat.size), stat.name})
            .second;
    if (!added) ++duplicates_[stat.name];
  }
  pool_.push_back(handle);
}

ZipArchive::~ZipArchive() {
  for (zip* handle : pool_) zip_discard(handle);
}

zip* ZipArchive::open_handle() const {
  zip_error_t error;
  zip_error_init(&error);
  auto* state = new FileSource{file_, 0, {}, std::nullopt};
  zip_error_init(&state->error);
  zip_source_t* source = zip_source_function_create(file_source_callback, state, &error);
  if (source == nullptr) {
    zip_error_fini(&state->error);
    delete state;
    throw_libzip_failure(path_, error);
  }
  zip* handle = zip_open_from_source(source, ZIP_RDONLY, &error);
  if (handle == nullptr) {
    std::optional<IoError> io_error = std::move(state->io_error);
    zip_source_free(source);  // frees `state` too
    if (io_error) {
      zip_error_fini(&error);
      throw *io_error;
    }
    throw_libzip_failure(path_, error);
  }
  zip_error_fini(&error);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sources_[handle] = state;
  }
  return handle;
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
  return open_handle();
}

void ZipArchive::release(zip* handle) const {
  std::lock_guard<std::mutex> lock(mutex_);
  pool_.push_back(handle);
}

std::vector<unsigned char> ZipArchive::read(const Entry& entry, uint64_t max_bytes,
                                            const std::string& subject, const SourceLocation& where) const {
  if (entry.size > max_bytes) {
    throw FormatError(subject + " declares " + std::to_string(entry.size) +
                          " bytes uncompressed, more than maxImageBytes = " + std::to_string(max_bytes),
                      where);
  }
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
    } else {
      // One byte more must not exist: the entry may not inflate beyond the size it declares.
      unsigned char extra = 0;
      const zip_int64_t more = zip_fread(file, &extra, 1);
      if (more > 0) {
        failure = "the entry inflates to more than the " + std::to_string(entry.size) + " bytes it declares";
      } else if (more < 0) {
        failure = zip_file_strerror(file);
      }
    }
    zip_fclose(file);
  }
  std::optional<IoError> io_error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto* state = static_cast<FileSource*>(sources_.at(handle));
    io_error = std::move(state->io_error);
    state->io_error.reset();
  }
  release(handle);
  if (io_error) throw *io_error;  // a failed read of the archive: the IoError naming its byte range
  if (!failure.empty()) {
    SourceLocation at_archive;
    at_archive.file = path_;
    throw FormatError("Cannot read entry " + std::to_string(entry.index) + " ('" + entry.name + "') of " +
                          path_ + ": " + failure,
                      at_archive);
  }
  return bytes;
}

}  // namespace cntkio::image
