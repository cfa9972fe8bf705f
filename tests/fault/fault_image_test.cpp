// Read faults under the image format (issue #24): the map file, an image file and a zip archive, each read
// through the Env; a failed or short read is a located IoError naming the file, and a clean run after it
// reads the same minibatches.
#include <gtest/gtest.h>

#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <string>

#include "config/config_test_util.hpp"
#include "fault/fault_util.hpp"

using namespace cntkio;
using namespace cntkio::fault_test;
using cntkio::config_test::TempDir;

namespace {

std::string image_reader(const std::string& map) {
  return "reader = [ randomize = false\n deserializers = ([ type = \"ImageDeserializer\"\n file = \"" + map +
         "\"\n input = [ features = [ transforms = ([ type = \"Scale\" ; width = 4 ; height = 4 ; channels = "
         "3 "
         "]) ]\n labels = [ labelDim = 4 ] ] ]) ]";
}

}  // namespace

TEST(FaultRead, ImageMapFileAndImageFileReadErrorsAreLocatedIoErrors) {
  TempDir dir;
  std::string map_text;
  for (int i = 0; i < 4; ++i) {
    cv::Mat m(6 + i, 8, CV_8UC3, cv::Scalar(10 * i, 20, 30));
    const std::string name = dir.path("i" + std::to_string(i) + ".png");
    cv::imwrite(name, m);
    map_text += name + "\t" + std::to_string(i) + "\n";
  }
  const std::string map = dir.write("map.txt", map_text);
  const std::string reader = image_reader(map);
  const std::string clean = read_all(reader);
  ASSERT_FALSE(clean.empty());
  auto body = [&] { return read_all(reader); };
  EXPECT_GE(sweep_read_faults(Fault::Kind::kError, EIO, map, "cannot read bytes", clean, body), 1);
  const std::string image = dir.path("i2.png");
  EXPECT_GE(sweep_read_faults(Fault::Kind::kError, EIO, image, "cannot read bytes", clean, body), 1);
}

TEST(FaultRead, ZipArchiveReadErrorsAreLocatedIoErrors) {
  TempDir dir;
  const std::string zip = dir.path("simple.zip");
  std::filesystem::copy_file(std::string(CNTKIO_CONFORMANCE_DIR) + "/data/images/simple.zip", zip);
  const std::string map = dir.write("map.txt", zip + "@/chunk1/red.jpg\t0\n" + zip +
                                                   "@/chunk0/blue.jpg\t1\n" + zip + "@/chunk1/red.jpg\t2\n");
  const std::string reader = image_reader(map);
  const std::string clean = read_all(reader);
  ASSERT_FALSE(clean.empty());
  auto body = [&] { return read_all(reader); };
  // libzip reads the directory and then each entry: every one of those reads is failed in turn.
  EXPECT_GE(sweep_read_faults(Fault::Kind::kError, EIO, zip, "cannot read bytes", clean, body), 2);
}
