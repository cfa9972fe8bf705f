#include "formats/image/image_source.hpp"

#include <turbojpeg.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <opencv2/imgcodecs.hpp>
#include <optional>

#include "cntkio/env.hpp"
#include "cntkio/errors.hpp"
#include "core/input_file.hpp"

namespace cntkio::image {
namespace {

// A libjpeg-turbo decompressor per thread (handles are not thread-safe).
class TurboHandle {
 public:
  TurboHandle() : handle_(tjInitDecompress()) {}
  ~TurboHandle() {
    if (handle_ != nullptr) tjDestroy(handle_);
  }
  TurboHandle(const TurboHandle&) = delete;
  TurboHandle& operator=(const TurboHandle&) = delete;
  tjhandle get() const { return handle_; }

 private:
  tjhandle handle_;
};

uint32_t read_tiff(const unsigned char* p, size_t bytes, bool little_endian) {
  uint32_t v = 0;
  for (size_t i = 0; i < bytes; ++i) {
    v |= static_cast<uint32_t>(p[little_endian ? i : bytes - 1 - i]) << (8 * i);
  }
  return v;
}

// The orientation tag of an EXIF TIFF block: 1..8, 1 if absent, 0 if the block cannot be read.
int exif_orientation(const unsigned char* tiff, size_t n) {
  if (n < 8) return 0;
  bool little = false;
  if (tiff[0] == 'I' && tiff[1] == 'I') {
    little = true;
  } else if (!(tiff[0] == 'M' && tiff[1] == 'M')) {
    return 0;
  }
  if (read_tiff(tiff + 2, 2, little) != 42) return 0;
  const size_t ifd = read_tiff(tiff + 4, 4, little);
  if (ifd + 2 > n) return 0;
  const size_t count = read_tiff(tiff + ifd, 2, little);
  for (size_t i = 0; i < count; ++i) {
    const size_t entry = ifd + 2 + 12 * i;
    if (entry + 12 > n) return 0;
    if (read_tiff(tiff + entry, 2, little) != 0x0112) continue;
    if (read_tiff(tiff + entry + 2, 2, little) != 3 || read_tiff(tiff + entry + 4, 4, little) != 1) return 0;
    const uint32_t v = read_tiff(tiff + entry + 8, 2, little);
    return v >= 1 && v <= 8 ? static_cast<int>(v) : 0;
  }
  return 1;
}

// The EXIF orientation of a JPEG file: 1 if it has none, 0 if it cannot be told for sure.
int jpeg_orientation(const unsigned char* d, size_t n) {
  if (n < 4 || d[0] != 0xFF || d[1] != 0xD8) return 0;
  size_t p = 2;
  while (p + 4 <= n) {
    if (d[p] != 0xFF) return 0;
    const unsigned char marker = d[p + 1];
    if (marker == 0xFF) {
      ++p;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) return 1;  // start of scan: no EXIF before it
    if ((marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) {
      p += 2;
      continue;
    }
    const size_t length = static_cast<size_t>(d[p + 2]) << 8 | d[p + 3];
    if (length < 2 || p + 2 + length > n) return 0;
    if (marker == 0xE1 && length >= 8 && std::memcmp(d + p + 4, "Exif\0\0", 6) == 0) {
      return exif_orientation(d + p + 10, length - 8);
    }
    p += 2 + length;
  }
  return 0;
}

// libjpeg-turbo straight to BGR (or gray) with the accurate integer DCT and fancy upsampling: the same
// library and settings as OpenCV's imread, without OpenCV's scalar RGB-to-BGR pass (spec image.md §15).
// Only YCbCr and gray JPEGs that decode without even a warning are taken.
bool turbo_decode(const unsigned char* data, size_t size, bool grayscale, cv::Mat& out) {
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) return false;
  thread_local TurboHandle handle;
  if (handle.get() == nullptr) return false;
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  auto* bytes = const_cast<unsigned char*>(data);
  if (tjDecompressHeader3(handle.get(), bytes, static_cast<unsigned long>(size), &width, &height,
                          &subsampling, &colorspace) != 0) {
    return false;
  }
  if ((colorspace != TJCS_YCbCr && colorspace != TJCS_GRAY) || width <= 0 || height <= 0) return false;
  out.create(height, width, grayscale ? CV_8UC1 : CV_8UC3);
  if (tjDecompress2(handle.get(), bytes, static_cast<unsigned long>(size), out.data, width, 0, height,
                    grayscale ? TJPF_GRAY : TJPF_BGR, 0) != 0) {
    out.release();
    return false;
  }
  return true;
}

}  // namespace

bool decode_jpeg_fast(const unsigned char* data, size_t size, bool grayscale, bool apply_orientation,
                      cv::Mat& out) {
  if (apply_orientation && jpeg_orientation(data, size) != 1) return false;
  return turbo_decode(data, size, grayscale, out);
}

int decode_flags(bool grayscale, bool in_memory) {
  int flags = grayscale ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR;
  if (in_memory) flags |= cv::IMREAD_IGNORE_ORIENTATION;
  return flags;
}

cv::Mat decode_image(const unsigned char* data, size_t size, bool grayscale, bool apply_orientation,
                     const ImageLimits& limits, const std::string& subject, const SourceLocation& where) {
  const std::optional<ImageHeader> header = read_image_header(data, size);
  if (!header) return {};  // no format OpenCV decodes
  const std::string violation = limit_violation(*header, grayscale, limits);
  if (!violation.empty()) throw FormatError(subject + " " + violation, where);
  cv::Mat image;
  if (decode_jpeg_fast(data, size, grayscale, apply_orientation, image)) return image;
  if (size > static_cast<size_t>(INT_MAX)) {
    throw FormatError(
        subject + " holds " + std::to_string(size) + " bytes, more than OpenCV decodes (2^31 - 1)", where);
  }
  const cv::Mat buffer(1, static_cast<int>(size), CV_8UC1, const_cast<unsigned char*>(data));
  try {
    return cv::imdecode(buffer, decode_flags(grayscale, !apply_orientation));
  } catch (const cv::Exception&) {
    return {};
  }
}

cv::Mat decode_bytes(const unsigned char* data, size_t size, bool grayscale) {
  return decode_image(data, size, grayscale, false, ImageLimits{}, "The image", SourceLocation{});
}

cv::Mat ImageSourceSet::decode(size_t index) const {
  const ImageSource& source = sources_[index];
  SourceLocation where;
  where.file = map_file_;
  where.line = source.line + 1;
  const std::string cannot_open = "Cannot open file '" + source.path_as_written + "'";
  cv::Mat image;
  if (source.archive < 0) {
    std::vector<unsigned char> bytes;
    std::optional<core::InputFile> file;
    try {
      file.emplace(core::InputFile::open(source.path, "cannot open image file"));
    } catch (const IoError& e) {
      // A remote file the network or the server failed to give (not one that is not there): the storage's
      // fault, as a failed read below, not the data's.
      if (!Env::url_scheme(source.path).empty() && e.error_number() != ENOENT) throw IoError(e, where);
      throw FormatError(cannot_open, where, "(" + std::string(e.what()) + ")");
    } catch (const Error& e) {  // missing, not a regular file: CNTK's error for the image
      throw FormatError(cannot_open, where, "(" + std::string(e.what()) + ")");
    }
    if (file->size() > limits_.max_bytes) {
      throw FormatError("Image '" + source.path_as_written + "' is a file of " +
                            std::to_string(file->size()) +
                            " bytes, more than maxImageBytes = " + std::to_string(limits_.max_bytes),
                        where);
    }
    try {
      const std::string content = file->read_all(limits_.max_bytes);
      bytes.assign(content.begin(), content.end());
    } catch (const IoError& e) {
      // Grown past the limit while read: an invalid sequence. A failed read is the storage's fault: the
      // IoError naming the file and the byte range goes on as it is.
      if (e.error_number() == EFBIG) throw FormatError(cannot_open, where, "(" + std::string(e.what()) + ")");
      throw;
    }
    image = decode_image(bytes.data(), bytes.size(), grayscale_, true, limits_,
                         "Image '" + source.path_as_written + "'", where);
  } else {
    const ZipArchive& archive = *archives_[static_cast<size_t>(source.archive)];
    const std::string subject = "Zip entry '" + source.entry.name + "' of " + archive.path() + " (image '" +
                                source.path_as_written + "')";
    std::vector<unsigned char> bytes = archive.read(source.entry, limits_.max_bytes, subject, where);
    image = decode_image(bytes.data(), bytes.size(), grayscale_, false, limits_, subject, where);
  }
  if (image.empty()) throw FormatError(cannot_open, where);
  return image;
}

bool decode_base64(std::string_view text, std::vector<unsigned char>& out) {
  out.clear();
  if (text.size() % 4 != 0) return false;
  auto value = [](char c) -> uint32_t {
    if (c >= 'A' && c <= 'Z') return static_cast<uint32_t>(c - 'A');
    if (c >= 'a' && c <= 'z') return static_cast<uint32_t>(c - 'a' + 26);
    if (c >= '0' && c <= '9') return static_cast<uint32_t>(c - '0' + 52);
    if (c == '+') return 62;
    if (c == '/') return 63;
    return 0;  // '=' and anything else
  };
  size_t length = text.size() / 4 * 3;
  if (!text.empty()) {
    if (text[text.size() - 2] == '=') {
      length -= 2;
    } else if (text.back() == '=') {
      length -= 1;
    }
  }
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const uint32_t bits =
        value(text[i]) << 18 | value(text[i + 1]) << 12 | value(text[i + 2]) << 6 | value(text[i + 3]);
    out.push_back(static_cast<unsigned char>(bits >> 16));
    out.push_back(static_cast<unsigned char>(bits >> 8));
    out.push_back(static_cast<unsigned char>(bits));
  }
  out.resize(length);
  return true;
}

}  // namespace cntkio::image
