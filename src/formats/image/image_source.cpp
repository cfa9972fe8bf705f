#include "formats/image/image_source.hpp"

#include <unistd.h>

#include <opencv2/imgcodecs.hpp>

#include "cntkio/errors.hpp"

namespace cntkio::image {

int decode_flags(bool grayscale, bool in_memory) {
  int flags = grayscale ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR;
  if (in_memory) flags |= cv::IMREAD_IGNORE_ORIENTATION;
  return flags;
}

cv::Mat decode_bytes(const unsigned char* data, size_t size, bool grayscale) {
  if (size == 0) return {};
  const cv::Mat buffer(1, static_cast<int>(size), CV_8UC1, const_cast<unsigned char*>(data));
  try {
    return cv::imdecode(buffer, decode_flags(grayscale, true));
  } catch (const cv::Exception&) {
    return {};
  }
}

cv::Mat ImageSourceSet::decode(size_t index) const {
  const ImageSource& source = sources_[index];
  cv::Mat image;
  try {
    if (source.archive < 0) {
      // (checked first so that OpenCV does not log its own warning for a missing file)
      if (::access(source.path.c_str(), R_OK) == 0)
        image = cv::imread(source.path, decode_flags(grayscale_, false));
    } else {
      std::vector<unsigned char> bytes = archives_[static_cast<size_t>(source.archive)]->read(source.entry);
      image = decode_bytes(bytes.data(), bytes.size(), grayscale_);
    }
  } catch (const cv::Exception&) {
    image.release();
  }
  if (image.empty()) {
    SourceLocation where;
    where.file = map_file_;
    where.line = source.line + 1;
    throw FormatError("Cannot open file '" + source.path_as_written + "'", where);
  }
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
