// libFuzzer target: the image header readers (src/formats/image/image_header.cpp), which look at the bytes of
// an encoded image before any decoder does, to refuse images that declare more pixels or bytes than the
// limits allow. They parse a dozen formats by hand from untrusted bytes, so every read must stay inside the
// buffer (ASan checks that: the input is copied into a buffer of exactly its size), and what they return must
// be consistent with the limits check built on it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "formats/image/image_header.hpp"

namespace {

[[noreturn]] void broken(const char* what) {
  __builtin_printf("invariant violated: %s\n", what);
  std::abort();
}

uint64_t product_or_max(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return std::numeric_limits<uint64_t>::max();
  return a * b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size heap copy: a read one byte past the input is an ASan report, not a read of libFuzzer's
  // buffer slack.
  std::unique_ptr<unsigned char[]> bytes(new unsigned char[size == 0 ? 1 : size]);
  if (size > 0) std::memcpy(bytes.get(), data, size);
  const std::optional<cntkio::image::ImageHeader> header =
      cntkio::image::read_image_header(bytes.get(), size);
  if (!header) return 0;
  if (header->format == nullptr || header->format[0] == '\0') broken("a header without a format name");
  if (header->sample_bytes != 1 && header->sample_bytes != 2 && header->sample_bytes != 4 &&
      header->sample_bytes != 8) {
    broken("a sample size no decoder uses");
  }
  for (bool grayscale : {false, true}) {
    const uint64_t decoded = cntkio::image::decoded_bytes(*header, grayscale);
    const uint64_t expected =
        product_or_max(product_or_max(product_or_max(header->width, header->height), grayscale ? 1 : 3),
                       header->sample_bytes);
    if (decoded != expected) broken("decoded_bytes is not width x height x channels x sample bytes");
    cntkio::image::ImageLimits limits;
    const std::string violation = cntkio::image::limit_violation(*header, grayscale, limits);
    const bool within =
        product_or_max(header->width, header->height) <= limits.max_pixels && decoded <= limits.max_bytes;
    if (violation.empty() != within) broken("limit_violation disagrees with the declared size");
  }
  return 0;
}
