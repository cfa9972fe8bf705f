// Images through the whole reader: transform stage, per-sequence shapes in the packer, forced frame mode,
// thread-count independence.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <sstream>
#include <string>

#include "cntkio/config.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "pipeline/dump.hpp"
#include "pipeline/packer_common.hpp"

namespace cntkio {
namespace {

namespace fs = std::filesystem;

class ImagePipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cntkio_image_pipe_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream map(dir_ / "map.txt");
    for (int i = 0; i < 8; ++i) {
      cv::Mat m(6 + i % 3, 8, CV_8UC3);
      cv::randu(m, 0, 256);
      const std::string name = "i" + std::to_string(i) + ".png";
      cv::imwrite((dir_ / name).string(), m);
      map << ".../" << name << "\t" << i % 4 << "\n";
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Reads every minibatch of `epochs` epochs of `epoch_size` samples and prints them.
  std::string read(const std::string& reader_text, size_t mb, size_t epoch_size, size_t epochs = 1) {
    Config reader = Config::from_text(reader_text).get_block("reader");
    auto source = MinibatchSource::from_config(reader);
    std::ostringstream out;
    Minibatch batch;
    for (size_t e = 0; e < epochs; ++e) {
      source->start_epoch(mb, e, epoch_size);
      while (source->next_minibatch(batch)) {
        for (const StreamBatch& s : batch.streams) {
          out << s.info.name << " [";
          for (size_t d : s.info.sample_shape) out << d << ' ';
          out << "]\n";
          pipeline::write_stream_batch(s, out);
        }
      }
    }
    return out.str();
  }

  std::string composite(const std::string& transforms, const std::string& extra = "") {
    return "reader = [ randomize = true\n" + extra +
           "\n deserializers = ([ type = \"ImageDeserializer\"\n file = \"" + (dir_ / "map.txt").string() +
           "\"\n input = [ features = [ transforms = (" + transforms +
           ") ]\n labels = [ labelDim = 4 ] ] ]) ]";
  }

  fs::path dir_;
};

const char* kRandomChain =
    "[ type = \"Crop\" ; cropType = \"RandomSide\" ; sideRatio = 0.5:0.9 ; jitterType = \"UniRatio\" ; "
    "aspectRatio = 0.75:1 ] : [ type = \"Scale\" ; width = 5 ; height = 4 ; channels = 3 ] : "
    "[ type = \"Color\" ; brightnessRadius = 0.3 ; contrastRadius = 0.3 ; saturationRadius = 0.3 ] : "
    "[ type = \"Transpose\" ]";

TEST_F(ImagePipelineTest, RandomTransformsDoNotDependOnThreadCounts) {
  const std::string one = read(
      composite(kRandomChain, "loaderThreads = 0 ; multiThreadedDeserialization = false ; prefetch = false"),
      4, 8, 3);
  const std::string many = read(composite(kRandomChain, "loaderThreads = 4"), 4, 8, 3);
  EXPECT_EQ(one, many);
  EXPECT_NE(one.find("features [5 4 3 ]"), std::string::npos);
  // Different seeds give different data (the transforms are random at all).
  const std::string seeded = read(
      composite("[ type = \"Crop\" ; cropType = \"RandomSide\" ; sideRatio = 0.5:0.9 ; jitterType = "
                "\"UniRatio\" ; seed = 7 ] : "
                "[ type = \"Scale\" ; width = 5 ; height = 4 ; channels = 3 ] : [ type = \"Transpose\" ]"),
      4, 8, 3);
  EXPECT_NE(one, seeded);
}

TEST_F(ImagePipelineTest, VaryingShapesFailInOneMinibatchButNotAcrossMinibatches) {
  // Images are 6, 7 or 8 rows high: without Scale, a minibatch of one sequence always packs.
  const std::string text = read(composite(""), 1, 8);
  EXPECT_NE(text.find("features [3 8 6 ]"), std::string::npos);
  EXPECT_NE(text.find("features [3 8 7 ]"), std::string::npos);
  try {
    read(composite(""), 8, 8);
    FAIL() << "expected the varying-shape error";
  } catch (const FormatError& e) {
    EXPECT_EQ(
        e.cntk_text(),
        "Packer currently does not support samples with varying shapes.Please make sure there is a transform "
        "that unifies the shape of samples for input stream 'features' or the deserializer provides samples "
        "with the same shape.");
    EXPECT_EQ(e.location().stream, "features");
    EXPECT_FALSE(e.location().sequence_key.empty());
  }
}

TEST_F(ImagePipelineTest, ScaleWithTheWrongChannelCountIsAnErrorNotGarbage) {
  try {
    read(composite("[ type = \"Scale\" ; width = 5 ; height = 4 ; channels = 1 ]"), 2, 2);
    FAIL() << "expected an error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("holds 60 values, but the stream's shape holds 20"),
              std::string::npos);
  }
}

TEST_F(ImagePipelineTest, SoleImageDeserializerReadsOneImagePerRowInFrameMode) {
  Config reader = Config::from_text(composite("[ type = \"Scale\" ; width = 2 ; height = 2 ; channels = 3 ]"))
                      .get_block("reader");
  auto source = MinibatchSource::from_config(reader);
  source->start_epoch(3, 0, 8);
  Minibatch batch;
  ASSERT_TRUE(source->next_minibatch(batch));
  EXPECT_EQ(batch.streams[0].layout.num_parallel, 3u);
  EXPECT_EQ(batch.streams[0].layout.num_time_steps, 1u);
  EXPECT_EQ(batch.streams[0].info.sample_shape, (std::vector<size_t>{3, 2, 2}));
  EXPECT_EQ(batch.streams[1].info.storage, StorageFormat::kSparseCsc);
}

TEST(ImagePacker, BatchSampleShapeRules) {
  using pipeline::packer_detail::batch_sample_shape;
  StreamInfo unknown;
  unknown.name = "x";
  const size_t a[] = {3, 2, 2}, b[] = {3, 2, 1};
  SequenceData da, db;
  da.sample_shape = a;
  db.sample_shape = b;
  EXPECT_EQ(batch_sample_shape(unknown, {da, da}, {"0", "1"}), (std::vector<size_t>{3, 2, 2}));
  EXPECT_THROW(batch_sample_shape(unknown, {da, db}, {"0", "1"}), FormatError);
  EXPECT_THROW(batch_sample_shape(unknown, {SequenceData{}}, {"0"}), FormatError);  // no shape at all
  StreamInfo fixed = unknown;
  fixed.sample_shape = {12};
  EXPECT_EQ(batch_sample_shape(fixed, {da, SequenceData{}}, {"0", "1"}), (std::vector<size_t>{12}));
  EXPECT_THROW(batch_sample_shape(fixed, {db}, {"0"}), FormatError);
  SequenceData native;
  int payload = 0;
  native.native = &payload;
  EXPECT_THROW(batch_sample_shape(fixed, {native}, {"0"}), FormatError);
}

}  // namespace
}  // namespace cntkio
