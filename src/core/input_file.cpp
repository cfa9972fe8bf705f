#include "core/input_file.hpp"

#include <cerrno>
#include <utility>

#include "cntkio/errors.hpp"

namespace cntkio::core {

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
  return InputFile(Env::current()->new_random_access_file(path, open_failure));
}

void InputFile::read_exact_at(uint64_t offset, void* buffer, size_t n) const {
  const size_t got = read_at(offset, buffer, n);
  if (got != n) {
    throw IoError("the input file ended at byte " + std::to_string(offset + got) + " while reading bytes " +
                      std::to_string(offset) + ".." + std::to_string(offset + n) +
                      " (it is shorter than when it was opened, or was cut while being read)",
                  path(), 0);
  }
}

std::string InputFile::read_all(uint64_t max_bytes) const {
  std::string out;
  const uint64_t expected = size();
  if (expected > max_bytes) {
    throw IoError("the input file holds " + std::to_string(expected) + " bytes, more than the " +
                      std::to_string(max_bytes) + " accepted for it",
                  path(), EFBIG);
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
          "the input file holds more than the " + std::to_string(max_bytes) + " bytes accepted for it",
          path(), EFBIG);
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
