// Image size limits: headers of every format OpenCV decodes are read before decoding, and an image declaring
// more than maxImagePixels / maxImageBytes is refused without the allocation it asks for.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "core/little_memory.hpp"
#include "formats/image/image_header.hpp"
#include "formats/image/image_source.hpp"

namespace cntkio::image {
namespace {

namespace fs = std::filesystem;

cv::Mat picture(int rows, int cols, int depth) {
  cv::Mat m(rows, cols, CV_MAKETYPE(depth, 3));
  cv::randu(m, 0, depth == CV_8U ? 256 : 1);
  return m;
}

TEST(ImageLimits, HeadersOfEveryFormatOpenCvWritesGiveTheirSize) {
  struct Format {
    const char* extension;
    const char* name;
    int depth;
  };
  const Format formats[] = {
      {".jpg", "JPEG", CV_8U},          {".png", "PNG", CV_8U},        {".png", "PNG", CV_16U},
      {".bmp", "BMP", CV_8U},           {".webp", "WebP", CV_8U},      {".tiff", "TIFF", CV_8U},
      {".tiff", "TIFF", CV_16U},        {".jp2", "JPEG 2000", CV_8U},  {".exr", "OpenEXR", CV_32F},
      {".hdr", "Radiance HDR", CV_32F}, {".ras", "Sun raster", CV_8U}, {".ppm", "PNM", CV_8U},
      {".pgm", "PNM", CV_8U},           {".pbm", "PNM", CV_8U},        {".pam", "PAM", CV_8U},
      {".pfm", "PFM", CV_32F}};
  for (const Format& f : formats) {
    SCOPED_TRACE(std::string(f.extension) + " " + std::to_string(f.depth));
    std::vector<unsigned char> bytes;
    cv::Mat image = picture(50, 70, f.depth);  // JPEG 2000 needs more than a few pixels
    if (std::string(f.extension) == ".pgm" || std::string(f.extension) == ".pbm") {
      cv::cvtColor(image, image, cv::COLOR_BGR2GRAY);
    }
    ASSERT_TRUE(cv::imencode(f.extension, image, bytes));
    const auto header = read_image_header(bytes.data(), bytes.size());
    ASSERT_TRUE(header.has_value());
    EXPECT_STREQ(header->format, f.name);
    EXPECT_EQ(header->width, 70u);
    EXPECT_EQ(header->height, 50u);
    EXPECT_EQ(header->sample_bytes, f.depth == CV_8U ? 1u : f.depth == CV_16U ? 2u : 4u);
    // Decoding goes on as OpenCV's own.
    const cv::Mat ours = decode_bytes(bytes.data(), bytes.size(), false);
    const cv::Mat theirs = cv::imdecode(bytes, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
    ASSERT_FALSE(ours.empty());
    EXPECT_EQ(cv::norm(ours, theirs, cv::NORM_INF), 0.0);
  }
}

// Files that libjpeg and OpenCV decode (with a warning) must not be refused by the size check before them.
TEST(ImageLimits, DamageTheDecodersTolerateDoesNotHideTheSize) {
  const cv::Mat image = picture(6, 10, CV_8U);
  {
    // Stray bytes between two JPEG segments (a segment length one byte off): libjpeg passes over them.
    std::vector<unsigned char> bytes;
    ASSERT_TRUE(cv::imencode(".jpg", image, bytes));
    const size_t after_app0 = 4 + ((size_t{bytes[4]} << 8) | bytes[5]);  // SOI, then APP0's marker and length
    bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(after_app0), {0x00, 0x11, 0x22});
    const auto header = read_image_header(bytes.data(), bytes.size());
    ASSERT_TRUE(header.has_value());
    EXPECT_EQ(header->width, 10u);
    EXPECT_EQ(header->height, 6u);
    const cv::Mat decoded = decode_bytes(bytes.data(), bytes.size(), false);
    EXPECT_EQ(decoded.cols, 10);
    EXPECT_EQ(decoded.rows, 6);
  }
  {
    // A PPM header whose lines, comment included, end in CR alone: OpenCV ends a comment at CR or LF.
    std::vector<unsigned char> bytes;
    ASSERT_TRUE(cv::imencode(".ppm", image, bytes));
    const std::string plain(bytes.begin(), bytes.end());
    const size_t pixels = plain.find("255\n") + 4;
    const std::string header_text = "P6\r# a comment\r10 6\r255\n";
    std::vector<unsigned char> cr(header_text.begin(), header_text.end());
    cr.insert(cr.end(), bytes.begin() + static_cast<std::ptrdiff_t>(pixels), bytes.end());
    const auto header = read_image_header(cr.data(), cr.size());
    ASSERT_TRUE(header.has_value());
    EXPECT_EQ(header->width, 10u);
    const cv::Mat decoded = decode_bytes(cr.data(), cr.size(), false);
    ASSERT_FALSE(decoded.empty());
    EXPECT_EQ(cv::norm(decoded, image, cv::NORM_INF), 0.0);
  }
}

TEST(ImageLimits, BytesWithoutAFormatsSignatureAreNotAnImage) {
  const std::string text = "just some text, not an image";
  EXPECT_FALSE(read_image_header(reinterpret_cast<const unsigned char*>(text.data()), text.size()));
  EXPECT_TRUE(decode_bytes(reinterpret_cast<const unsigned char*>(text.data()), text.size(), false).empty());
  // Cut right after the signature: no size to read.
  const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13, 'I', 'H'};
  EXPECT_FALSE(read_image_header(png, sizeof png));
}

TEST(ImageLimits, ViolationsNameTheSizeAndTheLimit) {
  ImageHeader h;
  h.format = "PNG";
  h.width = 30000;
  h.height = 30000;
  ImageLimits limits;
  EXPECT_EQ(limit_violation(h, false, limits),
            "declares 30000 x 30000 pixels (PNG), more than maxImagePixels = 268435456");
  h.width = h.height = 16384;  // exactly 2^28 pixels
  EXPECT_EQ(limit_violation(h, false, limits), "");
  h.sample_bytes = 2;
  EXPECT_EQ(
      limit_violation(h, false, limits),
      "declares 16384 x 16384 pixels (PNG), 1610612736 bytes decoded, more than maxImageBytes = 1073741824");
  EXPECT_EQ(limit_violation(h, true, limits), "");  // one channel: 512 MiB
  h.width = h.height = UINT64_MAX;                  // saturates instead of wrapping
  EXPECT_EQ(decoded_bytes(h, false), UINT64_MAX);
  EXPECT_NE(limit_violation(h, false, limits), "");
}

// A real 8x8 JPEG patched to declare 65500 x 65500 (about 600 bytes).
std::vector<unsigned char> jpeg_bomb() {
  std::vector<unsigned char> bytes;
  cv::imencode(".jpg", cv::Mat(8, 8, CV_8UC3, cv::Scalar(1, 2, 3)), bytes);
  for (size_t p = 2; p + 9 < bytes.size(); ++p) {
    if (bytes[p] == 0xFF && bytes[p + 1] == 0xC0) {
      bytes[p + 5] = bytes[p + 7] = 0xFF;
      bytes[p + 6] = bytes[p + 8] = 0xDC;
      break;
    }
  }
  return bytes;
}

TEST(ImageLimits, AJpegDeclaring65500SquaredPixelsIsRefusedBeforeAnyLargeAllocation) {
  const std::vector<unsigned char> bomb = jpeg_bomb();
  ASSERT_LT(bomb.size(), 1000u);
  const fs::path dir = fs::temp_directory_path() / ("cntkio_limits_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "bomb.jpg";
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(bomb.data()), static_cast<std::streamsize>(bomb.size()));
  EXPECT_TRUE(test::within_little_memory([&] {
    ImageSourceSet set("map.txt", false);
    ImageSource source;
    source.path = source.path_as_written = file.string();
    set.sources().push_back(source);
    try {
      set.decode(0);
    } catch (const FormatError& e) {
      return e.cntk_text() ==
                 "Image '" + file.string() +
                     "' declares 65500 x 65500 pixels (JPEG), more than maxImagePixels = 268435456" &&
             e.location().line == 1u;
    }
    return false;
  }));
  // In memory (zip, base64) too.
  EXPECT_TRUE(test::within_little_memory([&] {
    try {
      decode_bytes(bomb.data(), bomb.size(), false);
    } catch (const FormatError& e) {
      return e.cntk_text().find("65500 x 65500") != std::string::npos;
    }
    return false;
  }));
  fs::remove_all(dir);
}

TEST(ImageLimits, TheLimitsAreReaderConfigKeys) {
  const fs::path dir = fs::temp_directory_path() / ("cntkio_limits_cfg_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  cv::imwrite((dir / "a.png").string(),
              cv::Mat(40, 60, CV_8UC3, cv::Scalar(1, 2, 3)));  // a file of ~100 bytes
  std::ofstream(dir / "map.txt") << (dir / "a.png").string() << "\t0\n";
  auto read = [&](const std::string& keys) {
    const std::string text =
        "reader = [ randomize = false\n deserializers = ([ type = \"ImageDeserializer\" ; " + keys +
        "\n file = \"" + (dir / "map.txt").string() +
        "\"\n input = [ features = [ transforms = () ]\n labels = [ labelDim = 2 ] ] ]) ]";
    auto source = MinibatchSource::from_config(Config::from_text(text).get_block("reader"));
    source->start_epoch(1, 0, 1);
    Minibatch mb;
    return source->next_minibatch(mb);
  };
  EXPECT_TRUE(read(""));
  EXPECT_TRUE(read("maxImagePixels = 2400 ; maxImageBytes = 7200"));
  try {
    read("maxImagePixels = 2399");
    FAIL() << "2400 pixels are more than 2399";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.cntk_text(), "Image '" + (dir / "a.png").string() +
                                 "' declares 60 x 40 pixels (PNG), more than maxImagePixels = 2399");
    EXPECT_EQ(e.location().file, (dir / "map.txt").string());
    EXPECT_EQ(e.location().line, 1u);
  }
  try {
    read("maxImageBytes = 7199");
    FAIL() << "7200 bytes are more than 7199";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.cntk_text(),
              "Image '" + (dir / "a.png").string() +
                  "' declares 60 x 40 pixels (PNG), 7200 bytes decoded, more than maxImageBytes = 7199");
  }
  EXPECT_THROW(read("maxImagePixels = 0"), ConfigError);
  fs::remove_all(dir);
}

TEST(ImageLimits, AnImageFileLargerThanMaxImageBytesIsNotRead) {
  const fs::path dir = fs::temp_directory_path() / ("cntkio_limits_file_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  cv::imwrite((dir / "a.png").string(), cv::Mat(40, 40, CV_8UC3, cv::Scalar(1, 2, 3)));
  const uint64_t size = fs::file_size(dir / "a.png");
  ImageLimits limits;
  limits.max_bytes = size - 1;
  ImageSourceSet set("map.txt", false, limits);
  ImageSource source;
  source.path = source.path_as_written = (dir / "a.png").string();
  set.sources().push_back(source);
  try {
    set.decode(0);
    FAIL() << "expected the file size limit";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.cntk_text(), "Image '" + source.path + "' is a file of " + std::to_string(size) +
                                 " bytes, more than maxImageBytes = " + std::to_string(size - 1));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cntkio::image
