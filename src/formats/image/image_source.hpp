// Where the images of a deserializer come from, and how they are decoded (spec image.md §3–§5).
//
// ImageSourceSet holds, per map line, the file path or zip entry of its image and decodes it on demand. Files
// are read through core::InputFile (regular files only: a FIFO, device or directory is refused instead of
// waited on or read without end) and decoded from memory with EXIF orientation applied, as CNTK's imread
// did; zip entries and base64 data are decoded with IMREAD_IGNORE_ORIENTATION (CNTK's imdecode did not
// rotate).
//
// Before anything decodes, the image's header is read (image_header.hpp) and an image declaring more pixels
// or decoded bytes than the deserializer's limits is a FormatError; so is an image file or zip entry larger
// than maxImageBytes.
//
// YCbCr and gray JPEGs go through libjpeg-turbo directly where that gives OpenCV's pixels exactly (it skips
// OpenCV's own colour-order pass); everything else goes to OpenCV.
//
// NativeImage is what an image deserializer's chunk hands out for its image stream (SequenceData::native):
// either a source to decode or an already decoded image, plus the multiview copy id. Only the image
// transformer reads it.
//
// Thread-safety: ImageSourceSet::decode may be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <opencv2/core.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/errors.hpp"
#include "formats/image/image_header.hpp"
#include "formats/image/zip_archive.hpp"

namespace cntkio::image {

/// One map-file image reference.
struct ImageSource {
  std::string path_as_written;  ///< the map's path field (used in CNTK's messages)
  std::string path;             ///< after `...` expansion: a file, or the archive of a zip entry
  int archive = -1;             ///< index into ImageSourceSet::archives(), -1 for a plain file
  ZipArchive::Entry entry;      ///< zip entry (archive >= 0)
  uint64_t line = 0;            ///< 0-based map line
};

/// OpenCV decode flags: IMREAD_GRAYSCALE or IMREAD_COLOR, plus IMREAD_IGNORE_ORIENTATION for in-memory data.
int decode_flags(bool grayscale, bool in_memory);

/// Decodes a YCbCr or gray JPEG with libjpeg-turbo directly to BGR/gray, pixel for pixel what OpenCV's
/// decoder gives. With `apply_orientation` (files: imread rotates by EXIF) only JPEGs whose EXIF orientation
/// is known to be 1 are taken. False (and nothing decoded) where OpenCV must decide.
bool decode_jpeg_fast(const unsigned char* data, size_t size, bool grayscale, bool apply_orientation,
                      cv::Mat& out);

/// Decodes image bytes: 8-bit BGR (or gray), HWC. `apply_orientation` for files (CNTK's imread rotated by
/// EXIF orientation), false for in-memory data (zip, base64). Throws FormatError "<subject> declares ..."
/// located at `where` when the header declares more than `limits` allow (nothing is decoded then); an empty
/// Mat when the bytes are not an image OpenCV decodes.
cv::Mat decode_image(const unsigned char* data, size_t size, bool grayscale, bool apply_orientation,
                     const ImageLimits& limits, const std::string& subject, const SourceLocation& where);

/// Decodes in-memory image bytes (zip, base64) within the default limits; an empty Mat if OpenCV cannot.
cv::Mat decode_bytes(const unsigned char* data, size_t size, bool grayscale);

class ImageSourceSet {
 public:
  ImageSourceSet(std::string map_file, bool grayscale, ImageLimits limits = {})
      : map_file_(std::move(map_file)), grayscale_(grayscale), limits_(limits) {}

  const std::string& map_file() const { return map_file_; }
  const ImageLimits& limits() const { return limits_; }
  std::vector<ImageSource>& sources() { return sources_; }
  const std::vector<ImageSource>& sources() const { return sources_; }
  std::vector<std::unique_ptr<ZipArchive>>& archives() { return archives_; }

  /// Decodes source `index`: 8-bit BGR (or gray), HWC. Throws FormatError "Cannot open file '<path>'"
  /// located at its map line when the file is missing, not a regular file, unreadable or not an image, and
  /// a FormatError naming the limit when the image is larger than the limits allow.
  cv::Mat decode(size_t index) const;

 private:
  std::string map_file_;
  bool grayscale_;
  ImageLimits limits_;
  std::vector<ImageSource> sources_;
  std::vector<std::unique_ptr<ZipArchive>> archives_;
};

/// The item of an image stream (SequenceData::native).
struct NativeImage {
  const ImageSourceSet* sources = nullptr;  ///< decode sources->decode(index) ...
  size_t index = 0;
  cv::Mat decoded;       ///< ... or use this image (Base64), which must not be modified
  uint32_t copy_id = 0;  ///< multiview view 0..9
  uint64_t line = 0;     ///< 0-based map line, for messages
};

/// CNTK's DecodeBase64 (spec image.md §4.3): false if the length is not a multiple of 4. Characters outside
/// the alphabet decode as 0 bits.
bool decode_base64(std::string_view text, std::vector<unsigned char>& out);

}  // namespace cntkio::image
