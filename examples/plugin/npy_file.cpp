#include "npy_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cntkio/errors.hpp>
#include <limits>
#include <type_traits>

namespace cntkio_npy {
namespace {

static_assert(std::endian::native == std::endian::little,
              "this plugin hands the little-endian values of the files out as they are");

constexpr std::string_view kMagic = "\x93NUMPY";

[[noreturn]] void refuse(const std::string& path, uint64_t offset, const std::string& what) {
  cntkio::SourceLocation where;
  where.file = path;
  where.byte_offset = offset;
  throw cntkio::FormatError("Malformed .npy file: " + what, where);
}

// The header's text: a Python dict literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4),
// }.
class DictParser {
 public:
  DictParser(std::string_view text, uint64_t offset, const std::string& path)
      : text_(text), offset_(offset), path_(path) {}

  NpyHeader parse() {
    bool have_descr = false, have_order = false, have_shape = false;
    NpyHeader header;
    expect('{');
    while (true) {
      skip_blanks();
      if (peek() == '}') break;
      const size_t key_at = pos_;
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        check_new(have_descr, key_at, key);
        skip_blanks();
        const size_t at = pos_;
        const std::string descr = string_literal();
        if (descr == "<f4") {
          header.is_double = false;
        } else if (descr == "<f8") {
          header.is_double = true;
        } else if (descr == ">f4" || descr == ">f8") {
          fail(at, "the values are big-endian ('" + descr + "'); only '<f4' and '<f8' are read");
        } else {
          fail(at,
               "the values are of type '" + descr + "'; only '<f4' (float32) and '<f8' (float64) are read");
        }
      } else if (key == "fortran_order") {
        check_new(have_order, key_at, key);
        skip_blanks();
        const size_t at = pos_;
        if (word() != "False")
          fail(at, "the array is in Fortran order; only C order (fortran_order False) is read");
      } else if (key == "shape") {
        check_new(have_shape, key_at, key);
        shape(header);
      } else {
        fail(key_at, "unknown header key '" + key + "'");
      }
      skip_blanks();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != '}') {
        fail(pos_, "expected ',' or '}' in the header");
      }
    }
    ++pos_;
    skip_blanks();
    if (pos_ != text_.size()) fail(pos_, "text after the header's closing '}'");
    if (!have_descr || !have_order || !have_shape) {
      fail(0, std::string("the header lacks '") +
                  (!have_descr   ? "descr"
                   : !have_order ? "fortran_order"
                                 : "shape") +
                  "'");
    }
    return header;
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& what) const {
    refuse(path_, offset_ + at, what + ".");
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_blanks() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  void expect(char c) {
    skip_blanks();
    if (peek() != c) fail(pos_, std::string("expected '") + c + "' in the header");
    ++pos_;
  }

  void check_new(bool& seen, size_t at, const std::string& key) const {
    if (seen) fail(at, "the header gives '" + key + "' twice");
    seen = true;
  }

  std::string string_literal() {
    skip_blanks();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail(pos_, "expected a quoted string in the header");
    const size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') fail(pos_, "escapes in the header's strings are not read");
      ++pos_;
    }
    if (pos_ == text_.size()) fail(start - 1, "a string of the header is not closed");
    return std::string(text_.substr(start, pos_++ - start));
  }

  std::string word() {
    skip_blanks();
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isalpha(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  uint64_t integer() {
    skip_blanks();
    const size_t start = pos_;
    uint64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const uint64_t digit = static_cast<uint64_t>(text_[pos_] - '0');
      if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10)
        fail(start, "a dimension of the shape is too large");
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) fail(start, "expected a dimension (a number) in the shape");
    if (peek() == 'L') ++pos_;  // Python 2 wrote long integers so
    return value;
  }

  void shape(NpyHeader& header) {
    skip_blanks();
    const size_t at = pos_;
    expect('(');
    std::vector<uint64_t> dims;
    while (true) {
      skip_blanks();
      if (peek() == ')') break;
      dims.push_back(integer());
      skip_blanks();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != ')') {
        fail(pos_, "expected ',' or ')' in the shape");
      }
    }
    ++pos_;
    if (dims.size() != 2) {
      fail(at, "the array has " + std::to_string(dims.size()) +
                   " dimensions; a sequence file holds a 2-D array of shape (samples, dim)");
    }
    if (dims[0] == 0) fail(at, "the array has no rows; a sequence needs at least one sample");
    if (dims[0] > std::numeric_limits<uint32_t>::max()) {
      fail(at,
           "the array has " + std::to_string(dims[0]) + " rows; a sequence holds at most 4294967295 samples");
    }
    if (dims[1] == 0) fail(at, "the array has no columns; a sample needs at least one value");
    header.rows = dims[0];
    header.columns = dims[1];
  }

  std::string_view text_;
  uint64_t offset_;  // of the text in the file
  const std::string& path_;
  size_t pos_ = 0;
};

uint64_t little_endian(std::string_view bytes) {
  uint64_t value = 0;
  for (size_t i = bytes.size(); i-- > 0;) value = value << 8 | static_cast<unsigned char>(bytes[i]);
  return value;
}

// A file open for reading; only regular files open (a FIFO would block, a folder is no data).
class InputFile {
 public:
  explicit InputFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) throw cntkio::IoError("cannot open .npy file", path, errno);
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int error = errno;
      ::close(fd_);
      throw cntkio::IoError("cannot read .npy file", path, error);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw cntkio::IoError("cannot open .npy file (not a regular file)", path, 0);
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }

  // Reads `size` bytes at `offset`; fewer only where the file ends.
  size_t read_at(uint64_t offset, void* into, size_t size) const {
    size_t done = 0;
    while (done < size) {
      const ssize_t n =
          ::pread(fd_, static_cast<char*>(into) + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw cntkio::IoError("cannot read .npy file", path_, errno);
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    return done;
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

NpyHeader header_of(const InputFile& file, const std::string& path) {
  std::string start(std::min<uint64_t>(file.size(), 12 + kMaxHeaderBytes), '\0');
  start.resize(file.read_at(0, start.data(), start.size()));
  return parse_npy_header(start, file.size(), path);
}

}  // namespace

NpyHeader parse_npy_header(std::string_view start, uint64_t file_size, const std::string& path) {
  if (start.size() < kMagic.size() || start.substr(0, kMagic.size()) != kMagic) {
    refuse(path, 0, "it does not start with the .npy magic bytes \\x93NUMPY.");
  }
  if (start.size() < 10) refuse(path, start.size(), "the file ends inside its preamble.");
  const unsigned major = static_cast<unsigned char>(start[6]);
  const unsigned minor = static_cast<unsigned char>(start[7]);
  if (major < 1 || major > 3 || minor != 0) {
    refuse(path, 6,
           "format version " + std::to_string(major) + "." + std::to_string(minor) +
               " is not read (1.0, 2.0 and 3.0 are).");
  }
  const uint64_t length_bytes = major == 1 ? 2 : 4;
  if (start.size() < 8 + length_bytes) refuse(path, start.size(), "the file ends inside its preamble.");
  const uint64_t header_length = little_endian(start.substr(8, length_bytes));
  const uint64_t header_offset = 8 + length_bytes;
  if (header_length > kMaxHeaderBytes) {
    refuse(path, 8,
           "its header length " + std::to_string(header_length) + " is above the " +
               std::to_string(kMaxHeaderBytes) + " bytes read.");
  }
  if (header_offset + header_length > start.size()) {
    refuse(path, 8,
           "the file ends inside its header (" + std::to_string(header_length) + " bytes from offset " +
               std::to_string(header_offset) + " promised, the file has " + std::to_string(file_size) +
               " bytes).");
  }
  NpyHeader header = DictParser(start.substr(header_offset, header_length), header_offset, path).parse();
  header.data_offset = header_offset + header_length;

  const uint64_t value_size = header.is_double ? 8 : 4;
  const uint64_t available = file_size - header.data_offset;
  const bool too_many = header.columns > std::numeric_limits<uint64_t>::max() / value_size / header.rows;
  const uint64_t needed = too_many ? 0 : header.rows * header.columns * value_size;
  if (too_many || needed != available) {
    refuse(path, header.data_offset,
           "its shape (" + std::to_string(header.rows) + ", " + std::to_string(header.columns) + ") of " +
               (header.is_double ? "'<f8'" : "'<f4'") + " values needs " +
               (too_many ? std::string("more than 2^64") : std::to_string(needed)) +
               " bytes after the header, the file has " + std::to_string(available) + ".");
  }
  return header;
}

NpyHeader read_npy_header(const std::string& path) {
  const InputFile file(path);
  return header_of(file, path);
}

template <class T>
std::vector<T> read_npy_values(const std::string& path, const NpyHeader& header) {
  const InputFile file(path);
  if (header_of(file, path) != header) {
    refuse(path, 0, "the file changed since it was indexed (its header or size differ).");
  }
  const size_t count = static_cast<size_t>(header.rows * header.columns);
  std::vector<T> values(count);
  const bool same_type = header.is_double == std::is_same_v<T, double>;
  if (same_type) {
    if (file.read_at(header.data_offset, values.data(), count * sizeof(T)) != count * sizeof(T)) {
      refuse(path, header.data_offset, "the file was cut since it was indexed.");
    }
    return values;
  }
  using Stored = std::conditional_t<std::is_same_v<T, double>, float, double>;
  std::vector<Stored> stored(count);
  if (file.read_at(header.data_offset, stored.data(), count * sizeof(Stored)) != count * sizeof(Stored)) {
    refuse(path, header.data_offset, "the file was cut since it was indexed.");
  }
  for (size_t i = 0; i < count; ++i) values[i] = static_cast<T>(stored[i]);
  return values;
}

template std::vector<float> read_npy_values<float>(const std::string&, const NpyHeader&);
template std::vector<double> read_npy_values<double>(const std::string&, const NpyHeader&);

}  // namespace cntkio_npy
