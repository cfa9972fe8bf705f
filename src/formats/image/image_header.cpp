#include "formats/image/image_header.hpp"

#include <cstring>
#include <string_view>

namespace cntkio::image {
namespace {

// Reads within [data, data + size) only; every accessor fails (false / nullopt) rather than read past it.
class Bytes {
 public:
  Bytes(const unsigned char* data, size_t size) : data_(data), size_(size) {}
  size_t size() const { return size_; }
  bool has(size_t offset, size_t n) const { return offset <= size_ && n <= size_ - offset; }
  bool starts_with(size_t offset, std::string_view text) const {
    return has(offset, text.size()) && std::memcmp(data_ + offset, text.data(), text.size()) == 0;
  }
  unsigned char at(size_t offset) const { return data_[offset]; }  // callers check has() first
  std::string_view text(size_t offset, size_t n) const {           // callers check has() first
    return {reinterpret_cast<const char*>(data_ + offset), n};
  }
  // Unsigned integer of `n` bytes (n <= 8), big or little endian.
  std::optional<uint64_t> uint(size_t offset, size_t n, bool little_endian) const {
    if (!has(offset, n)) return std::nullopt;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) {
      v |= static_cast<uint64_t>(data_[offset + (little_endian ? i : n - 1 - i)]) << (8 * i);
    }
    return v;
  }
  std::optional<uint64_t> be(size_t offset, size_t n) const { return uint(offset, n, false); }
  std::optional<uint64_t> le(size_t offset, size_t n) const { return uint(offset, n, true); }

 private:
  const unsigned char* data_;
  size_t size_;
};

std::optional<ImageHeader> sized(const char* format, uint64_t width, uint64_t height,
                                 uint32_t sample_bytes = 1) {
  ImageHeader h;
  h.format = format;
  h.width = width;
  h.height = height;
  h.sample_bytes = sample_bytes;
  return h;
}

bool is_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// JPEG: the frame header (SOFn) gives precision, height and width; markers before it are skipped by length.
// Bytes that are no marker between two segments are passed over, as libjpeg does ("extraneous bytes before
// marker", a warning): a segment length one byte off, common in files from the web, still decodes.
std::optional<ImageHeader> jpeg(const Bytes& b) {
  size_t p = 2;
  while (b.has(p, 2)) {
    if (b.at(p) != 0xFF) {
      ++p;
      continue;
    }
    const unsigned char marker = b.at(p + 1);
    if (marker == 0xFF) {  // fill byte
      ++p;
      continue;
    }
    if ((marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) {  // no length
      p += 2;
      continue;
    }
    if (marker == 0xD9 || marker == 0xDA) return std::nullopt;  // end or scan before any frame header
    const auto length = b.be(p + 2, 2);
    if (!length || *length < 2) return std::nullopt;
    const bool frame = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (frame) {
      const auto precision = b.be(p + 4, 1);
      const auto height = b.be(p + 5, 2);
      const auto width = b.be(p + 7, 2);
      if (!precision || !height || !width || *height == 0) return std::nullopt;  // 0: height in a DNL marker
      return sized("JPEG", *width, *height, *precision > 8 ? 2 : 1);
    }
    p += 2 + *length;
  }
  return std::nullopt;
}

std::optional<ImageHeader> png(const Bytes& b) {
  if (!b.starts_with(12, "IHDR")) return std::nullopt;
  const auto width = b.be(16, 4);
  const auto height = b.be(20, 4);
  const auto depth = b.be(24, 1);
  if (!width || !height || !depth) return std::nullopt;
  return sized("PNG", *width, *height, *depth > 8 ? 2 : 1);
}

std::optional<ImageHeader> bmp(const Bytes& b) {
  const auto info_size = b.le(14, 4);
  if (!info_size) return std::nullopt;
  if (*info_size == 12) {  // OS/2 1.x: 16-bit sizes
    const auto width = b.le(18, 2);
    const auto height = b.le(20, 2);
    if (!width || !height) return std::nullopt;
    return sized("BMP", *width, *height);
  }
  const auto width = b.le(18, 4);
  const auto height = b.le(22, 4);
  if (!width || !height) return std::nullopt;
  // Signed 32-bit values; a negative height means rows top-down.
  auto magnitude = [](uint64_t v) {
    const auto s = static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)));
    return static_cast<uint64_t>(s < 0 ? -s : s);
  };
  return sized("BMP", magnitude(*width), magnitude(*height));
}

std::optional<ImageHeader> webp(const Bytes& b) {
  if (b.starts_with(12, "VP8X")) {
    const auto width = b.le(24, 3);
    const auto height = b.le(27, 3);
    if (!width || !height) return std::nullopt;
    return sized("WebP", *width + 1, *height + 1);
  }
  if (b.starts_with(12, "VP8L")) {
    const auto signature = b.le(20, 1);
    const auto bits = b.le(21, 4);
    if (!signature || *signature != 0x2F || !bits) return std::nullopt;
    return sized("WebP", (*bits & 0x3FFF) + 1, ((*bits >> 14) & 0x3FFF) + 1);
  }
  if (b.starts_with(12, "VP8 ")) {
    if (!b.has(23, 3) || b.at(23) != 0x9D || b.at(24) != 0x01 || b.at(25) != 0x2A) return std::nullopt;
    const auto width = b.le(26, 2);
    const auto height = b.le(28, 2);
    if (!width || !height) return std::nullopt;
    return sized("WebP", *width & 0x3FFF, *height & 0x3FFF);
  }
  return std::nullopt;
}

// TIFF and BigTIFF: width, length and bits per sample of the first image file directory (the page OpenCV
// decodes).
std::optional<ImageHeader> tiff(const Bytes& b) {
  const bool little = b.at(0) == 'I';
  const bool big = b.at(2 + (little ? 0 : 1)) == 0x2B;
  const auto ifd = big ? b.uint(8, 8, little) : b.uint(4, 4, little);
  if (!ifd) return std::nullopt;
  const auto count = b.uint(*ifd, big ? 8 : 2, little);
  if (!count) return std::nullopt;
  const size_t entry_size = big ? 20 : 12;
  const size_t first_entry = *ifd + (big ? 8 : 2);
  std::optional<uint64_t> width, height;
  uint64_t bits = 8;
  for (uint64_t i = 0; i < *count && b.has(first_entry, (i + 1) * entry_size); ++i) {
    const size_t e = first_entry + i * entry_size;
    const uint64_t tag = *b.uint(e, 2, little);
    const uint64_t type = *b.uint(e + 2, 2, little);
    const size_t value_at = e + (big ? 12 : 8);
    // The first value, in place (all of these fit): SHORT (3), LONG (4) or LONG8 (16).
    std::optional<uint64_t> value;
    if (type == 3) {
      value = b.uint(value_at, 2, little);
    } else if (type == 4) {
      value = b.uint(value_at, 4, little);
    } else if (type == 16) {
      value = b.uint(value_at, 8, little);
    }
    if (tag == 256) width = value;
    if (tag == 257) height = value;
    if (tag == 258 && value) {
      const uint64_t values = *b.uint(e + 4, big ? 8 : 4, little);
      const size_t in_place = big ? 8 : 4;
      if (type == 3 && values * 2 > in_place) {  // stored elsewhere: the offset is in place
        const auto offset = b.uint(value_at, big ? 8 : 4, little);
        value = offset ? b.uint(*offset, 2, little) : std::nullopt;
      }
      if (value) bits = *value;
    }
  }
  if (!width || !height) return std::nullopt;
  return sized("TIFF", *width, *height, bits > 16 ? 4 : bits > 8 ? 2 : 1);
}

// The SIZ segment of a JPEG 2000 codestream starting at `p` (at its SOC marker).
std::optional<ImageHeader> j2k_codestream(const Bytes& b, size_t p) {
  if (!b.has(p, 4) || b.at(p) != 0xFF || b.at(p + 1) != 0x4F || b.at(p + 2) != 0xFF || b.at(p + 3) != 0x51) {
    return std::nullopt;
  }
  const auto x = b.be(p + 8, 4);
  const auto y = b.be(p + 12, 4);
  const auto x0 = b.be(p + 16, 4);
  const auto y0 = b.be(p + 20, 4);
  const auto precision = b.be(p + 42, 1);  // Ssiz of the first component
  if (!x || !y || !x0 || !y0 || !precision || *x0 > *x || *y0 > *y) return std::nullopt;
  return sized("JPEG 2000", *x - *x0, *y - *y0, (*precision & 0x7F) + 1 > 8 ? 2 : 1);
}

// JP2: the image header box inside the header superbox, or else the codestream box.
std::optional<ImageHeader> jp2(const Bytes& b) {
  size_t p = 0;
  size_t end = b.size();
  while (b.has(p, 8)) {
    uint64_t length = *b.be(p, 4);
    size_t header = 8;
    if (length == 1) {
      const auto wide = b.be(p + 8, 8);
      if (!wide) return std::nullopt;
      length = *wide;
      header = 16;
    } else if (length == 0) {
      length = end - p;  // to the end
    }
    if (length < header || !b.has(p, length) || p + length > end) return std::nullopt;
    if (b.starts_with(p + 4, "jp2h")) {  // descend into the superbox
      end = p + length;
      p += header;
      continue;
    }
    if (b.starts_with(p + 4, "ihdr")) {
      const auto height = b.be(p + header, 4);
      const auto width = b.be(p + header + 4, 4);
      const auto bits = b.be(p + header + 10, 1);
      if (!height || !width || !bits) return std::nullopt;
      return sized("JPEG 2000", *width, *height, (*bits & 0x7F) + 1 > 8 ? 2 : 1);
    }
    if (b.starts_with(p + 4, "jp2c")) return j2k_codestream(b, p + header);
    p += length;
  }
  return std::nullopt;
}

// OpenEXR: the dataWindow attribute (box2i) of the first header.
std::optional<ImageHeader> exr(const Bytes& b) {
  size_t p = 8;
  for (int attributes = 0; attributes < 1000; ++attributes) {
    size_t name_end = p;
    while (name_end < b.size() && b.at(name_end) != 0) ++name_end;
    if (name_end >= b.size() || name_end == p) return std::nullopt;  // cut short, or the header ended
    size_t type_end = name_end + 1;
    while (type_end < b.size() && b.at(type_end) != 0) ++type_end;
    if (type_end >= b.size()) return std::nullopt;
    const auto size = b.le(type_end + 1, 4);
    if (!size || !b.has(type_end + 5, *size)) return std::nullopt;
    const size_t value = type_end + 5;
    const std::string_view name = b.text(p, name_end - p);
    if (name == "dataWindow" && *size == 16) {
      auto int32 = [&b](size_t at) { return static_cast<int64_t>(static_cast<int32_t>(*b.le(at, 4))); };
      const int64_t x_min = int32(value), y_min = int32(value + 4), x_max = int32(value + 8),
                    y_max = int32(value + 12);
      if (x_max < x_min || y_max < y_min) return std::nullopt;
      return sized("OpenEXR", static_cast<uint64_t>(x_max - x_min + 1),
                   static_cast<uint64_t>(y_max - y_min + 1), 4);
    }
    p = value + *size;
  }
  return std::nullopt;
}

// Radiance HDR: header lines up to an empty one, then "-Y <height> +X <width>" (or another orientation).
std::optional<ImageHeader> hdr(const Bytes& b) {
  size_t p = 0;
  for (;;) {  // find the empty line
    size_t eol = p;
    while (eol < b.size() && b.at(eol) != '\n') ++eol;
    if (eol >= b.size()) return std::nullopt;
    const bool empty = eol == p;
    p = eol + 1;
    if (empty) break;
  }
  std::optional<uint64_t> width, height;
  for (int pair = 0; pair < 2; ++pair) {
    while (p < b.size() && b.at(p) == ' ') ++p;
    if (!b.has(p, 2) || (b.at(p) != '+' && b.at(p) != '-') || (b.at(p + 1) != 'X' && b.at(p + 1) != 'Y')) {
      return std::nullopt;
    }
    const bool is_x = b.at(p + 1) == 'X';
    p += 2;
    while (p < b.size() && b.at(p) == ' ') ++p;
    uint64_t v = 0;
    const size_t digits = p;
    while (p < b.size() && b.at(p) >= '0' && b.at(p) <= '9' && p - digits < 12)
      v = v * 10 + (b.at(p++) - '0');
    if (p == digits) return std::nullopt;
    (is_x ? width : height) = v;
  }
  if (!width || !height) return std::nullopt;
  return sized("Radiance HDR", *width, *height, 4);
}

// Netpbm (P1..P7) and PFM headers: whitespace-separated numbers after the magic, '#' comments in Netpbm.
class Tokens {
 public:
  Tokens(const Bytes& b, size_t p) : b_(b), p_(p) {}
  std::optional<std::string> next() {
    for (;;) {
      while (p_ < b_.size() && is_space(b_.at(p_))) ++p_;
      if (p_ < b_.size() && b_.at(p_) == '#') {  // a comment ends at CR or LF (OpenCV's reader: either)
        while (p_ < b_.size() && b_.at(p_) != '\n' && b_.at(p_) != '\r') ++p_;
        continue;
      }
      break;
    }
    std::string token;
    while (p_ < b_.size() && !is_space(b_.at(p_)) && token.size() < 64)
      token.push_back(static_cast<char>(b_.at(p_++)));
    if (token.empty()) return std::nullopt;
    return token;
  }
  std::optional<uint64_t> number() {
    const auto token = next();
    if (!token || token->size() > 19) return std::nullopt;
    uint64_t v = 0;
    for (char c : *token) {
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    return v;
  }

 private:
  const Bytes& b_;
  size_t p_;
};

std::optional<ImageHeader> netpbm(const Bytes& b) {
  const char kind = static_cast<char>(b.at(1));
  Tokens tokens(b, 2);
  if (kind == '7') {  // PAM: "WIDTH w", "HEIGHT h", "MAXVAL m", ... "ENDHDR"
    std::optional<uint64_t> width, height;
    uint64_t maxval = 255;
    for (int i = 0; i < 64; ++i) {
      const auto key = tokens.next();
      if (!key || *key == "ENDHDR") break;
      if (*key == "WIDTH") width = tokens.number();
      if (*key == "HEIGHT") height = tokens.number();
      if (*key == "MAXVAL") maxval = tokens.number().value_or(255);
    }
    if (!width || !height) return std::nullopt;
    return sized("PAM", *width, *height, maxval > 255 ? 2 : 1);
  }
  const auto width = tokens.number();
  const auto height = tokens.number();
  if (!width || !height) return std::nullopt;
  uint64_t maxval = 1;
  if (kind != '1' && kind != '4') {
    const auto m = tokens.number();
    if (!m) return std::nullopt;
    maxval = *m;
  }
  return sized("PNM", *width, *height, maxval > 255 ? 2 : 1);
}

std::optional<ImageHeader> pfm(const Bytes& b) {
  Tokens tokens(b, 2);
  const auto width = tokens.number();
  const auto height = tokens.number();
  if (!width || !height) return std::nullopt;
  return sized("PFM", *width, *height, 4);
}

std::optional<ImageHeader> sun_raster(const Bytes& b) {
  const auto width = b.be(4, 4);
  const auto height = b.be(8, 4);
  if (!width || !height) return std::nullopt;
  return sized("Sun raster", *width, *height);
}

// DICOM: Rows (0028,0010) and Columns (0028,0011) among the data elements after the preamble, with explicit
// or implicit value representations (little endian); elements of undefined length end the search.
std::optional<ImageHeader> dicom(const Bytes& b) {
  size_t p = 132;
  std::optional<uint64_t> rows, columns;
  uint64_t bits = 8;
  while (b.has(p, 8)) {
    const uint64_t group = *b.le(p, 2);
    const uint64_t element = *b.le(p + 2, 2);
    if (group > 0x0028) break;  // elements come in tag order: the image group is over
    const unsigned char v0 = b.at(p + 4), v1 = b.at(p + 5);
    const bool explicit_vr = v0 >= 'A' && v0 <= 'Z' && v1 >= 'A' && v1 <= 'Z';
    uint64_t length = 0;
    size_t value = 0;
    if (explicit_vr) {
      const std::string_view vr = b.text(p + 4, 2);
      const bool long_form = vr == "OB" || vr == "OW" || vr == "OF" || vr == "SQ" || vr == "UT" ||
                             vr == "UN" || vr == "OD" || vr == "OL" || vr == "OV" || vr == "UC" || vr == "UR";
      if (long_form) {
        const auto l = b.le(p + 8, 4);
        if (!l) return std::nullopt;
        length = *l;
        value = p + 12;
      } else {
        length = *b.le(p + 6, 2);
        value = p + 8;
      }
    } else {
      length = *b.le(p + 4, 4);
      value = p + 8;
    }
    if (length == 0xFFFFFFFF || !b.has(value, length)) break;
    if (group == 0x0028 && length >= 2) {
      const uint64_t v = *b.le(value, 2);
      if (element == 0x0010) rows = v;
      if (element == 0x0011) columns = v;
      if (element == 0x0100) bits = v;
    }
    p = value + length;
  }
  if (!rows || !columns) return std::nullopt;
  return sized("DICOM", *columns, *rows, bits > 16 ? 4 : bits > 8 ? 2 : 1);
}

}  // namespace

std::optional<ImageHeader> read_image_header(const unsigned char* data, size_t size) {
  const Bytes b(data, size);
  if (b.starts_with(0, "\xFF\xD8\xFF")) return jpeg(b);
  if (b.starts_with(0, "\x89PNG\r\n\x1A\n")) return png(b);
  if (b.starts_with(0, "BM")) return bmp(b);
  if (b.starts_with(0, "RIFF") && b.starts_with(8, "WEBP")) return webp(b);
  if (b.starts_with(0, std::string_view("II\x2A\x00", 4)) ||
      b.starts_with(0, std::string_view("MM\x00\x2A", 4)) ||
      b.starts_with(0, std::string_view("II\x2B\x00", 4)) ||
      b.starts_with(0, std::string_view("MM\x00\x2B", 4))) {
    return tiff(b);
  }
  if (b.starts_with(0, std::string_view("\x00\x00\x00\x0CjP  \r\n\x87\n", 12))) return jp2(b);
  if (b.starts_with(0, "\xFF\x4F\xFF\x51")) return j2k_codestream(b, 0);
  if (b.starts_with(0, "\x76\x2F\x31\x01")) return exr(b);
  if (b.starts_with(0, "#?RGBE") || b.starts_with(0, "#?RADIANCE")) return hdr(b);
  if (b.starts_with(0, "\x59\xA6\x6A\x95")) return sun_raster(b);
  if (b.has(0, 3) && b.at(0) == 'P' && is_space(b.at(2))) {
    if (b.at(1) >= '1' && b.at(1) <= '7') return netpbm(b);
    if (b.at(1) == 'F' || b.at(1) == 'f') return pfm(b);
  }
  if (b.starts_with(128, "DICM")) return dicom(b);
  return std::nullopt;
}

namespace {
// a x b, or UINT64_MAX where the product does not fit.
uint64_t saturated_product(uint64_t a, uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) return UINT64_MAX;
  return a * b;
}
}  // namespace

uint64_t decoded_bytes(const ImageHeader& header, bool grayscale) {
  const uint64_t per_pixel = (grayscale ? 1u : 3u) * uint64_t{header.sample_bytes};
  return saturated_product(saturated_product(header.width, header.height), per_pixel);
}

std::string limit_violation(const ImageHeader& header, bool grayscale, const ImageLimits& limits) {
  const uint64_t pixels = saturated_product(header.width, header.height);
  const std::string size = std::to_string(header.width) + " x " + std::to_string(header.height) +
                           " pixels (" + header.format + ")";
  if (pixels > limits.max_pixels) {
    return "declares " + size + ", more than maxImagePixels = " + std::to_string(limits.max_pixels);
  }
  const uint64_t bytes = decoded_bytes(header, grayscale);
  if (bytes > limits.max_bytes) {
    return "declares " + size + ", " + std::to_string(bytes) +
           " bytes decoded, more than maxImageBytes = " + std::to_string(limits.max_bytes);
  }
  return {};
}

}  // namespace cntkio::image
