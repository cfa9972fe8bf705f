// The size an encoded image declares, read from its header before anything decodes it (docs/formats/image.md,
// "Size limits").
//
// A few hundred bytes can declare an image of billions of pixels, and the decoders allocate what the header
// says before they find that the data is not there. The image deserializers therefore read the header
// themselves and refuse images above maxImagePixels / maxImageBytes first. The formats are those OpenCV's
// imdecode recognises in the build cntkio uses (JPEG, PNG, BMP, WebP, TIFF, JPEG 2000, OpenEXR, Radiance HDR,
// Sun raster, PBM/PGM/PPM/PAM, PFM, DICOM), detected by the same signatures; bytes that carry none of them
// are not an image OpenCV decodes.
//
// Thread-safety: free functions without state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace cntkio::image {

/// What an image header declares.
struct ImageHeader {
  const char* format = "";    ///< "JPEG", "PNG", ...
  uint64_t width = 0;         ///< pixels
  uint64_t height = 0;        ///< pixels
  uint32_t sample_bytes = 1;  ///< bytes per channel value the decoder works with (2: 16-bit, 4: float)
};

/// The header of the image in `data`; nullopt when the bytes carry no signature of a format OpenCV decodes,
/// or the header is cut short or unreadable (OpenCV could not decode them either).
std::optional<ImageHeader> read_image_header(const unsigned char* data, size_t size);

/// Limits on what one image may declare (the deserializer keys maxImagePixels and maxImageBytes).
struct ImageLimits {
  uint64_t max_pixels = uint64_t{1} << 28;  ///< width x height
  uint64_t max_bytes = uint64_t{1} << 30;   ///< decoded bytes, and bytes of the encoded image itself
};

/// Bytes an image of `header` takes decoded: width x height x channels (1 grayscale, else 3) x sample bytes.
uint64_t decoded_bytes(const ImageHeader& header, bool grayscale);

/// Empty when `header` keeps within `limits`; otherwise what it declares beyond which limit ("declares
/// 65500 x 65500 pixels (JPEG), more than maxImagePixels = 268435456").
std::string limit_violation(const ImageHeader& header, bool grayscale, const ImageLimits& limits);

}  // namespace cntkio::image
