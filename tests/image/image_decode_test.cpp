// The libjpeg-turbo path gives exactly OpenCV's pixels, and leaves EXIF-rotated JPEGs to OpenCV's imread.
#include <gtest/gtest.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <vector>

#include "formats/image/image_source.hpp"

namespace cntkio::image {
namespace {

namespace fs = std::filesystem;

cv::Mat picture(int rows, int cols, unsigned seed) {
  cv::Mat m(rows, cols, CV_8UC3);
  std::mt19937 rng(seed);
  for (int y = 0; y < rows; ++y) {
    for (int x = 0; x < cols; ++x) {
      m.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uint8_t>(x * 7 + rng() % 9), static_cast<uint8_t>(y * 5),
                                        static_cast<uint8_t>((x + y) * 3 + rng() % 5));
    }
  }
  return m;
}

bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

// Encodes `m` (BGR) with libjpeg-turbo's encoder, which can choose the chroma subsampling.
std::vector<unsigned char> encode(const cv::Mat& m, int subsampling, bool progressive) {
  tjhandle h = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int flags = progressive ? TJFLAG_PROGRESSIVE : 0;
  EXPECT_EQ(tjCompress2(h, m.data, m.cols, 0, m.rows, TJPF_BGR, &out, &size, subsampling, 85, flags), 0);
  std::vector<unsigned char> bytes(out, out + size);
  tjFree(out);
  tjDestroy(h);
  return bytes;
}

TEST(ImageDecode, TurboJpegMatchesOpenCvForEverySubsamplingAndMode) {
  int checked = 0;
  for (int sampling : {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_411, TJSAMP_440, TJSAMP_GRAY}) {
    for (bool progressive : {false, true}) {
      for (const cv::Size& size : {cv::Size(17, 9), cv::Size(64, 48), cv::Size(33, 70)}) {
        const std::vector<unsigned char> jpeg =
            encode(picture(size.height, size.width, static_cast<unsigned>(checked)), sampling, progressive);
        for (bool gray : {false, true}) {
          cv::Mat fast;
          ASSERT_TRUE(decode_jpeg_fast(jpeg.data(), jpeg.size(), gray, true, fast));
          const cv::Mat reference = cv::imdecode(jpeg, gray ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
          EXPECT_TRUE(same(fast, reference))
              << "sampling " << sampling << " progressive " << progressive << " " << size << " gray " << gray;
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 72);
  // A gray JPEG read as colour.
  std::vector<unsigned char> jpeg;
  cv::Mat gray_picture;
  cv::cvtColor(picture(20, 30, 1), gray_picture, cv::COLOR_BGR2GRAY);
  cv::imencode(".jpg", gray_picture, jpeg);
  cv::Mat fast;
  ASSERT_TRUE(decode_jpeg_fast(jpeg.data(), jpeg.size(), false, true, fast));
  EXPECT_TRUE(same(fast, cv::imdecode(jpeg, cv::IMREAD_COLOR)));
}

// Inserts an APP1 EXIF segment with the orientation tag after SOI.
std::vector<unsigned char> with_orientation(const std::vector<unsigned char>& jpeg, uint16_t orientation) {
  const unsigned char tiff[] = {'M',
                                'M',
                                0,
                                42,
                                0,
                                0,
                                0,
                                8,  // big-endian header, IFD at 8
                                0,
                                1,  // one entry
                                0x01,
                                0x12,
                                0,
                                3,
                                0,
                                0,
                                0,
                                1,  // orientation, SHORT, count 1
                                static_cast<unsigned char>(orientation >> 8),
                                static_cast<unsigned char>(orientation & 0xFF),
                                0,
                                0,
                                0,
                                0,
                                0,
                                0};
  std::vector<unsigned char> segment = {0xFF, 0xE1, 0, 0, 'E', 'x', 'i', 'f', 0, 0};
  segment.insert(segment.end(), std::begin(tiff), std::end(tiff));
  const size_t length = segment.size() - 2;
  segment[2] = static_cast<unsigned char>(length >> 8);
  segment[3] = static_cast<unsigned char>(length & 0xFF);
  // (element by element: GCC 12 reports a false -Warray-bounds for range inserts here at -O3)
  std::vector<unsigned char> out;
  out.reserve(jpeg.size() + segment.size());
  for (size_t i = 0; i < jpeg.size(); ++i) {
    if (i == 2) {
      for (unsigned char b : segment) out.push_back(b);
    }
    out.push_back(jpeg[i]);
  }
  return out;
}

TEST(ImageDecode, ExifOrientationGoesToOpenCvForFilesOnly) {
  std::vector<unsigned char> jpeg;
  cv::imencode(".jpg", picture(10, 16, 3), jpeg);
  const std::vector<unsigned char> rotated = with_orientation(jpeg, 6);
  const std::vector<unsigned char> upright = with_orientation(jpeg, 1);
  cv::Mat fast;
  EXPECT_FALSE(decode_jpeg_fast(rotated.data(), rotated.size(), false, true, fast));
  EXPECT_TRUE(decode_jpeg_fast(upright.data(), upright.size(), false, true, fast));
  EXPECT_TRUE(decode_jpeg_fast(rotated.data(), rotated.size(), false, false, fast));  // imdecode: no rotation
  EXPECT_EQ(fast.rows, 10);

  // Through a map file: the file is rotated as imread does (orientation 6: 16 rows x 10 columns).
  const fs::path dir = fs::temp_directory_path() / ("cntkio_decode_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "rotated.jpg";
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(rotated.data()), static_cast<std::streamsize>(rotated.size()));
  ImageSourceSet set("map.txt", false);
  ImageSource source;
  source.path = file.string();
  set.sources().push_back(source);
  const cv::Mat decoded = set.decode(0);
  EXPECT_EQ(decoded.rows, 16);
  EXPECT_TRUE(same(decoded, cv::imread(file.string(), cv::IMREAD_COLOR)));
  // In memory (zip, base64) CNTK's imdecode did not rotate.
  const cv::Mat in_memory = decode_bytes(rotated.data(), rotated.size(), false);
  EXPECT_EQ(in_memory.rows, 10);
  fs::remove_all(dir);
}

TEST(ImageDecode, NonJpegAndBrokenJpegFallBackToOpenCv) {
  std::vector<unsigned char> png;
  cv::imencode(".png", picture(5, 6, 2), png);
  cv::Mat fast;
  EXPECT_FALSE(decode_jpeg_fast(png.data(), png.size(), false, false, fast));
  EXPECT_TRUE(same(decode_bytes(png.data(), png.size(), false), picture(5, 6, 2)));
  std::vector<unsigned char> jpeg;
  cv::imencode(".jpg", picture(40, 40, 4), jpeg);
  jpeg.resize(jpeg.size() / 2);  // truncated: libjpeg warns, so OpenCV decides
  EXPECT_FALSE(decode_jpeg_fast(jpeg.data(), jpeg.size(), false, false, fast));
}

}  // namespace
}  // namespace cntkio::image
