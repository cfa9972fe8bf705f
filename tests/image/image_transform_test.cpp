// Every transform parameter against small hand-computed images (spec image.md §9). Expected values come from
// the spec's formulas and the raw std::mt19937 outputs it lists, never from the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>
#include <random>
#include <string>
#include <vector>

#include "cntkio/errors.hpp"
#include "cntkio/registry.hpp"
#include "formats/image/image_source.hpp"
#include "formats/image/image_transforms.hpp"

namespace cntkio::image {
namespace {

namespace fs = std::filesystem;

// 4 rows x 6 columns, 3 channels: B = 10y + x, G = 100 + 10y + x, R = 200 + 10y + x.
cv::Mat gradient() {
  cv::Mat m(4, 6, CV_8UC3);
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 6; ++x) {
      m.at<cv::Vec3b>(y, x) =
          cv::Vec3b(static_cast<uint8_t>(10 * y + x), static_cast<uint8_t>(100 + 10 * y + x),
                    static_cast<uint8_t>(200 + 10 * y + x));
    }
  }
  return m;
}

struct Result {
  std::vector<double> values;
  std::vector<size_t> shape;
};

class Runner {
 public:
  Runner(std::vector<ImageTransformOptions> transforms, ElementType type = ElementType::kFloat)
      : type_(type),
        logger_(std::make_shared<core::Logger>(
            1, [this](core::LogLevel, std::string_view line) { log_.emplace_back(line); })),
        transformer_(make_image_transformer(transforms, type, "features", logger_)) {}

  // Transforms `image` as slot `slot` of a batch of `batch` sequences.
  Result run(const cv::Mat& image, size_t slot = 0, size_t batch = 1, uint32_t copy_id = 0) {
    transformer_->start_batch(batch);
    NativeImage native;
    native.decoded = image;
    native.copy_id = copy_id;
    SequenceData in;
    in.number_of_samples = 1;
    in.native = &native;
    std::shared_ptr<const void> owner;
    SequenceData out = transformer_->apply(in, slot, owner);
    Result r;
    r.shape.assign(out.sample_shape.begin(), out.sample_shape.end());
    size_t n = 1;
    for (size_t d : r.shape) n *= d;
    for (size_t i = 0; i < n; ++i) {
      r.values.push_back(type_ == ElementType::kFloat ? static_cast<const float*>(out.values)[i]
                                                      : static_cast<const double*>(out.values)[i]);
    }
    return r;
  }

  SequenceTransformer& transformer() { return *transformer_; }
  const std::vector<std::string>& log() const { return log_; }

 private:
  ElementType type_;
  std::vector<std::string> log_;
  std::shared_ptr<core::Logger> logger_;
  SequenceTransformerPtr transformer_;
};

// HWC values of the gradient's rectangle (x, y, w, h), optionally mirrored.
std::vector<double> gradient_rect(int x0, int y0, int w, int h, bool mirrored = false) {
  std::vector<double> out;
  for (int y = y0; y < y0 + h; ++y) {
    for (int i = 0; i < w; ++i) {
      const int x = mirrored ? x0 + w - 1 - i : x0 + i;
      for (int c = 0; c < 3; ++c) out.push_back(100 * c + 10 * y + x);
    }
  }
  return out;
}

ImageCropOptions crop(ImageCropOptions::Type type = ImageCropOptions::Type::kCenter) {
  ImageCropOptions o;
  o.type = type;
  o.hflip = type == ImageCropOptions::Type::kRandomSide || type == ImageCropOptions::Type::kRandomArea;
  return o;
}

TEST(ImageTransforms, NoTransformsCastsTheDecodedPixelsAsHwc) {
  Runner r({});
  Result out = r.run(gradient());
  EXPECT_EQ(out.shape, (std::vector<size_t>{3, 6, 4}));
  EXPECT_EQ(out.values, gradient_rect(0, 0, 6, 4));
}

TEST(ImageTransforms, DoublePrecisionOutput) {
  Runner r({}, ElementType::kDouble);
  EXPECT_EQ(r.run(gradient()).values, gradient_rect(0, 0, 6, 4));
}

TEST(ImageTransforms, CenterCropWithoutSizeOrRatioKeepsTheWholeImage) {
  Runner r({crop()});
  EXPECT_EQ(r.run(gradient()).values, gradient_rect(0, 0, 6, 4));
}

TEST(ImageTransforms, CenterCropSideRatio) {
  ImageCropOptions o = crop();
  o.side_ratio_min = o.side_ratio_max = 0.5;  // round(min(4, 6) * 0.5) = 2, at ((6-2)/2, (4-2)/2)
  Runner r({o});
  Result out = r.run(gradient());
  EXPECT_EQ(out.shape, (std::vector<size_t>{3, 2, 2}));
  EXPECT_EQ(out.values, gradient_rect(2, 1, 2, 2));
}

TEST(ImageTransforms, CenterCropAreaRatio) {
  ImageCropOptions o = crop();
  o.area_ratio_min = o.area_ratio_max = 0.375;  // round(sqrt(24 * 0.375)) = 3, at (1, 0)
  Runner r({o});
  EXPECT_EQ(r.run(gradient()).values, gradient_rect(1, 0, 3, 3));
}

TEST(ImageTransforms, CenterCropFixedSizeWidthAndHeight) {
  ImageCropOptions o = crop();
  o.crop_width = 3;
  o.crop_height = 2;  // at ((6-3)/2, (4-2)/2) = (1, 1)
  Runner r({o});
  EXPECT_EQ(r.run(gradient()).values, gradient_rect(1, 1, 3, 2));
  ImageCropOptions big = crop();
  big.crop_width = big.crop_height = 9;  // clipped to the image
  Runner whole({big});
  EXPECT_EQ(whole.run(gradient()).values, gradient_rect(0, 0, 6, 4));
}

TEST(ImageTransforms, AspectRatioDrawsTheOrientation) {
  ImageCropOptions o = crop();
  o.side_ratio_min = o.side_ratio_max = 0.5;  // 2 x 2, area 4
  o.aspect_ratio_min = o.aspect_ratio_max = 2;
  // Slot 0 (mt19937(0)): first draw 2357136044 > 2^31-1 -> false -> h = sqrt(8) = 2, w = sqrt(2) = 1.
  // Slot 1 (mt19937(1)): first draw 1791095845 -> true -> w = 2, h = 1.
  Runner r({o});
  EXPECT_EQ(r.run(gradient(), 0, 2).values, gradient_rect(2, 1, 1, 2));
  EXPECT_EQ(r.run(gradient(), 1, 2).values, gradient_rect(2, 1, 2, 1));
}

TEST(ImageTransforms, UniratioJitterDrawsTheSideRatio) {
  ImageCropOptions o = crop();
  o.side_ratio_min = 0.25;
  o.side_ratio_max = 0.75;
  o.jitter_uniratio = true;
  // s = 2357136044 / 2^32 * 0.5 + 0.25 = 0.524..., round(4 * s) = 2.
  Runner r({o});
  EXPECT_EQ(r.run(gradient()).values, gradient_rect(2, 1, 2, 2));
  // second draw 2546248239 -> s = 0.546..., still 2; a range of jitter none always uses the minimum: 1.
  ImageCropOptions none = o;
  none.jitter_uniratio = false;
  Runner n({none});
  EXPECT_EQ(n.run(gradient()).values, gradient_rect(2, 1, 1, 1));
}

TEST(ImageTransforms, RandomSideCropPositionAndSlotSeeding) {
  ImageCropOptions o = crop(ImageCropOptions::Type::kRandomSide);
  o.crop_width = o.crop_height = 2;
  // Slot 0: x = uniform_int(0, 4): bucket 858993459, 2357136044 / bucket = 2; y = uniform_int(0, 2): bucket
  // 1431655765, 2546248239 / bucket = 1; flip: 3071714933 > 2^31-1 -> no.
  Runner r({o});
  EXPECT_EQ(r.run(gradient(), 0, 2).values, gradient_rect(2, 1, 2, 2));
  // Slot 1 (seed 1): 1791095845 -> 2; 4282876139 -> 2; flip: 3093770124 -> no.
  EXPECT_EQ(r.run(gradient(), 1, 2).values, gradient_rect(2, 2, 2, 2));
}

TEST(ImageTransforms, RandomCropFlipFollowsTheBernoulliDraw) {
  ImageCropOptions o = crop(ImageCropOptions::Type::kRandomArea);
  o.crop_width = 3;
  o.crop_height = 4;  // x in [0, 3], y has no range (no draw)
  for (uint32_t seed = 0; seed < 6; ++seed) {
    o.seed = seed;
    std::mt19937 e(seed);
    const uint32_t bucket = 4294967295u / 4;  // range 3: remainder 3 == range -> +1
    const int x = static_cast<int>(e() / (bucket + 1));
    const bool flip = e() <= 2147483647u;
    Runner r({o});
    EXPECT_EQ(r.run(gradient()).values, gradient_rect(x, 0, 3, 4, flip)) << "seed " << seed;
  }
  o.seed = 0;
  o.hflip = false;  // no Bernoulli draw: mt19937(0)'s first draw gives x = 2357136044 / 1073741824 = 2
  Runner r({o});
  EXPECT_EQ(r.run(gradient()).values, gradient_rect(2, 0, 3, 4, false));
}

TEST(ImageTransforms, MultiViewPositionsAndMirroredViews) {
  ImageCropOptions o = crop(ImageCropOptions::Type::kMultiView10);
  o.side_ratio_min = o.side_ratio_max = 0.5;  // 2 x 2
  Runner r({o});
  const int xs[] = {0, 4, 0, 4, 2};
  const int ys[] = {0, 0, 2, 2, 1};
  for (uint32_t view = 0; view < 10; ++view) {
    EXPECT_EQ(r.run(gradient(), 0, 1, view).values,
              gradient_rect(xs[view % 5], ys[view % 5], 2, 2, view >= 5))
        << "view " << view;
  }
}

TEST(ImageTransforms, ScaleFillNearest) {
  ImageScaleOptions s;
  s.width = 3;
  s.height = 2;
  s.channels = 3;
  s.interpolation = ImageScaleOptions::Interpolation::kNearest;  // source x = 0, 2, 4; y = 0, 2
  Runner r({s});
  Result out = r.run(gradient());
  EXPECT_EQ(out.shape, (std::vector<size_t>{3, 3, 2}));
  std::vector<double> expected;
  for (int y : {0, 2}) {
    for (int x : {0, 2, 4}) {
      for (int c = 0; c < 3; ++c) expected.push_back(100 * c + 10 * y + x);
    }
  }
  EXPECT_EQ(out.values, expected);
}

TEST(ImageTransforms, ScaleLinearHalvesByAveragingPairs) {
  cv::Mat even(2, 4, CV_8UC1);
  for (int x = 0; x < 4; ++x) {
    even.at<uint8_t>(0, x) = static_cast<uint8_t>(2 * x);
    even.at<uint8_t>(1, x) = static_cast<uint8_t>(100 + 2 * x);
  }
  ImageScaleOptions s;
  s.width = 2;
  s.height = 1;
  s.channels = 1;
  Runner r({s});
  // Destination x maps to source 2x + 0.5, y to 0.5: the mean of 4 pixels.
  EXPECT_EQ(r.run(even).values, (std::vector<double>{51, 55}));
}

TEST(ImageTransforms, ScaleCubicAndLanczosKeepAUniformImage) {
  for (auto interpolation :
       {ImageScaleOptions::Interpolation::kCubic, ImageScaleOptions::Interpolation::kLanczos}) {
    ImageScaleOptions s;
    s.width = 5;
    s.height = 3;
    s.channels = 3;
    s.interpolation = interpolation;
    Runner r({s});
    Result out = r.run(cv::Mat(4, 6, CV_8UC3, cv::Scalar(7, 8, 9)));
    ASSERT_EQ(out.values.size(), 45u);
    for (size_t i = 0; i < out.values.size(); ++i) EXPECT_EQ(out.values[i], 7 + static_cast<double>(i % 3));
  }
}

TEST(ImageTransforms, ScaleModeCropFitsTheShortSideThenCentres) {
  ImageScaleOptions s;
  s.width = s.height = 2;
  s.channels = 3;
  s.interpolation = ImageScaleOptions::Interpolation::kNearest;
  s.mode = ImageScaleOptions::Mode::kCrop;  // w >= h: new size 3 x 2 (x = 0, 2, 4), crop x from (3-2)/2 = 0
  Runner r({s});
  std::vector<double> expected;
  for (int y : {0, 2}) {
    for (int x : {0, 2}) {
      for (int c = 0; c < 3; ++c) expected.push_back(100 * c + 10 * y + x);
    }
  }
  EXPECT_EQ(r.run(gradient()).values, expected);
}

TEST(ImageTransforms, ScaleModePadWithConstantAndReplicatedBorders) {
  ImageScaleOptions s;
  s.width = s.height = 4;
  s.channels = 1;
  s.interpolation = ImageScaleOptions::Interpolation::kNearest;
  s.mode = ImageScaleOptions::Mode::kPad;  // w > h: 4 x round(4*4/6) = 4 x 3, top 0, bottom 1
  s.pad_value = 7;
  cv::Mat gray(4, 6, CV_8UC1);
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 6; ++x) gray.at<uint8_t>(y, x) = static_cast<uint8_t>(10 * y + x);
  }
  // nearest: source x = floor(dx * 1.5) = 0, 1, 3, 4; y = floor(dy * 4/3) = 0, 1, 2
  const std::vector<double> body = {0, 1, 3, 4, 10, 11, 13, 14, 20, 21, 23, 24};
  Runner constant({s});
  std::vector<double> expected = body;
  for (int i = 0; i < 4; ++i) expected.push_back(7);
  EXPECT_EQ(constant.run(gray).values, expected);
  s.pad_value = -1;
  Runner replicate({s});
  expected = body;
  for (double v : {20, 21, 23, 24}) expected.push_back(v);
  EXPECT_EQ(replicate.run(gray).values, expected);
}

TEST(ImageTransforms, ScaleModeCropThatCannotCoverTheTargetIsALocatedError) {
  ImageScaleOptions s;
  s.width = 8;
  s.height = 2;
  s.channels = 3;
  s.mode = ImageScaleOptions::Mode::kCrop;  // 6x4 -> 3x2, narrower than 8
  Runner r({s});
  try {
    r.run(gradient());
    FAIL() << "expected an error";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.location().stream, "features");
    EXPECT_NE(std::string(e.what()).find("scaleMode=crop"), std::string::npos);
  }
}

TEST(ImageTransforms, ColorBrightnessShiftsByTheDrawTimesTheMean) {
  ImageColorOptions c;
  c.brightness_radius = 0.2;  // b = 0.019525400921702379 (spec), mean 100 -> beta = (float)(b * 400 / 4)
  Runner r({c});
  const auto beta = static_cast<float>(0.019525400921702379 * 400 / 4);
  Result out = r.run(cv::Mat(2, 2, CV_8UC1, cv::Scalar(100)));
  for (double v : out.values) EXPECT_EQ(v, static_cast<double>(100.0f + beta));
}

TEST(ImageTransforms, ColorContrastScalesAndClamps) {
  ImageColorOptions c;
  c.contrast_radius = 0.2;  // alpha = (float)(1 + 0.019525400921702379)
  Runner r({c});
  const auto alpha = static_cast<float>(1 + 0.019525400921702379);
  cv::Mat m(1, 2, CV_8UC1);
  m.at<uint8_t>(0, 0) = 100;
  m.at<uint8_t>(0, 1) = 255;
  Result out = r.run(m);
  EXPECT_EQ(out.values[0], static_cast<double>(100.0f * alpha));
  EXPECT_EQ(out.values[1], 255.0);  // clamped
}

TEST(ImageTransforms, ColorSaturationScalesTheHsvSaturation) {
  ImageColorOptions c;
  c.saturation_radius = 0.2;  // ratio = 1.0195...: S = 0.5 -> 0.5 * ratio; V = 200
  Runner r({c});
  const double ratio = 1 + 0.019525400921702379;
  Result out = r.run(cv::Mat(1, 1, CV_8UC3, cv::Scalar(100, 100, 200)));
  const double low = 200 * (1 - 0.5 * ratio);
  EXPECT_NEAR(out.values[0], low, 1e-3);
  EXPECT_NEAR(out.values[1], low, 1e-3);
  EXPECT_NEAR(out.values[2], 200, 1e-3);
}

TEST(ImageTransforms, ColorWithAllRadiiZeroIsANoOpThatDrawsNothing) {
  ImageColorOptions zero;
  ImageCropOptions o = crop(ImageCropOptions::Type::kRandomSide);
  o.crop_width = o.crop_height = 2;
  Runner r({zero, o});  // the crop's own engine still gives slot 0's first position
  EXPECT_EQ(r.run(gradient()).values, gradient_rect(2, 1, 2, 2));
}

fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("cntkio_image_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

TEST(ImageTransforms, IntensityAddsThePcaShiftInRgbOrderAndClamps) {
  const std::string file = (temp_dir() / "eigen.xml").string();
  {
    cv::FileStorage fs(file, cv::FileStorage::WRITE);
    fs << "EigVal" << cv::Mat(cv::Matx13f(1, 2, 3));
    fs << "EigVec" << cv::Mat(cv::Matx33f::eye());
  }
  ImageIntensityOptions o;
  o.std_dev = 0.1;
  o.file = file;
  Runner r({o});
  // a = normal draws (spec: -0.0678141043, 0.131082773, 0.115548007) times EigVal; shift = a (identity);
  // B gets shift[2], G shift[1], R shift[0].
  const float a0 = -0.0678141043f * 1, a1 = 0.131082773f * 2, a2 = 0.115548007f * 3;
  cv::Mat m(1, 2, CV_8UC3);
  m.at<cv::Vec3b>(0, 0) = cv::Vec3b(100, 100, 100);
  m.at<cv::Vec3b>(0, 1) = cv::Vec3b(255, 255, 0);
  Result out = r.run(m);
  EXPECT_FLOAT_EQ(static_cast<float>(out.values[0]), 100 + a2);
  EXPECT_FLOAT_EQ(static_cast<float>(out.values[1]), 100 + a1);
  EXPECT_FLOAT_EQ(static_cast<float>(out.values[2]), 100 + a0);
  EXPECT_EQ(out.values[3], 255);  // clamped above
  EXPECT_EQ(out.values[4], 255);
  EXPECT_EQ(out.values[5], 0);  // clamped below
}

TEST(ImageTransforms, IntensityWithoutFileOrWithZeroDeviationIsANoOp) {
  ImageIntensityOptions none;
  none.std_dev = 0.1;
  Runner r({none});
  EXPECT_EQ(r.run(gradient()).values, gradient_rect(0, 0, 6, 4));
}

TEST(ImageTransforms, IntensityFileErrors) {
  ImageIntensityOptions o;
  o.file = (temp_dir() / "missing.xml").string();
  for (const double deviation : {0.1, 0.0}) {  // CNTK opens the file even where a deviation of 0 ignores it
    o.std_dev = deviation;
    try {
      Runner r({o});
      FAIL() << deviation;
    } catch (const IoError& e) {
      EXPECT_EQ(e.cntk_text(),
                "Could not open file: " + o.file + " '" + o.file + "': No such file or directory");
      EXPECT_EQ(e.path(), o.file);
    }
  }
  o.std_dev = 0.1;
  o.file = (temp_dir() / "not_storage.xml").string();
  std::ofstream(o.file) << "this is not an OpenCV storage";
  try {
    Runner r({o});
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(e.cntk_text(), "Could not open file: " + o.file);
  }
  o.file = (temp_dir() / "bad_eig.xml").string();
  {
    cv::FileStorage fs(o.file, cv::FileStorage::WRITE);
    fs << "EigVal" << cv::Mat(cv::Matx12f(1, 2));
  }
  try {
    Runner r({o});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.cntk_text(), "Invalid EigVal data in file: " + o.file);
  }
}

std::string write_mean(const std::string& name, int channels, int rows, int cols,
                       const std::vector<float>& v) {
  const std::string file = (temp_dir() / name).string();
  cv::FileStorage fs(file, cv::FileStorage::WRITE);
  fs << "Channel" << channels << "Row" << rows << "Col" << cols;
  fs << "MeanImg" << cv::Mat(1, static_cast<int>(v.size()), CV_32F, const_cast<float*>(v.data())).clone();
  return file;
}

TEST(ImageTransforms, MeanSubtractsElementWiseAsHwcBgr) {
  std::vector<float> mean(12);
  for (size_t i = 0; i < mean.size(); ++i) mean[i] = 0.5f * static_cast<float>(i);
  ImageMeanOptions o;
  o.file = write_mean("mean.xml", 3, 2, 2, mean);
  Runner r({o});
  cv::Mat m = gradient()(cv::Rect(0, 0, 2, 2)).clone();
  Result out = r.run(m);
  const std::vector<double> pixels = gradient_rect(0, 0, 2, 2);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(out.values[i], pixels[i] - mean[i]);
}

// OpenCV writes and reads `.gz` storage itself when it has the path; cntkio reads the bytes and inflates
// them.
TEST(ImageTransforms, AGzipCompressedMeanFileIsRead) {
  std::vector<float> mean(12);
  for (size_t i = 0; i < mean.size(); ++i) mean[i] = 0.25f * static_cast<float>(i);
  ImageMeanOptions o;
  o.file = write_mean("mean.xml.gz", 3, 2, 2, mean);
  {
    std::ifstream in(o.file, std::ios::binary);
    ASSERT_EQ(in.get(), 0x1f);  // really gzip
  }
  Runner r({o});
  Result out = r.run(gradient()(cv::Rect(0, 0, 2, 2)).clone());
  const std::vector<double> pixels = gradient_rect(0, 0, 2, 2);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(out.values[i], pixels[i] - mean[i]);
}

TEST(ImageTransforms, ADamagedGzipMeanFileNamesTheFile) {
  ImageMeanOptions o;
  o.file = (temp_dir() / "cut.xml.gz").string();
  {
    std::ofstream out(o.file, std::ios::binary);
    out << std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8);
  }
  try {
    Runner r({o});
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(e.location().file, o.file);
    EXPECT_NE(std::string(e.what()).find("gzip file is damaged"), std::string::npos) << e.what();
  }
}

TEST(ImageTransforms, MeanOfAnotherSizeIsIgnoredWithAWarning) {
  ImageMeanOptions o;
  o.file = write_mean("mean_small.xml", 3, 1, 1, {1, 2, 3});
  Runner r({o});
  EXPECT_EQ(r.run(gradient()).values, gradient_rect(0, 0, 6, 4));
  ASSERT_EQ(r.log().size(), 1u);  // CNTK's two lines in one message: concurrent slots do not interleave them
  EXPECT_EQ(r.log()[0],
            "WARNING: Mean file does not match the size of the input image, will be ignored.\n"
            "Please remove mean transformation from the config.");
}

TEST(ImageTransforms, MeanFileWithTheWrongElementCountIsRejected) {
  ImageMeanOptions o;
  o.file = write_mean("mean_bad.xml", 3, 2, 2, {1, 2, 3});
  try {
    Runner r({o});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.cntk_text(), "Invalid data in file: " + o.file);
  }
}

TEST(ImageTransforms, TransposeMakesPlanarChwWithBgrPlanes) {
  Runner r({ImageTransposeOptions{}});
  Result out = r.run(gradient());
  EXPECT_EQ(out.shape, (std::vector<size_t>{6, 4, 3}));
  std::vector<double> expected;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 6; ++x) expected.push_back(100 * c + 10 * y + x);
    }
  }
  EXPECT_EQ(out.values, expected);
}

TEST(ImageTransforms, StreamShapeFollowsScaleCropAndTranspose) {
  ImageScaleOptions s;
  s.width = 5;
  s.height = 7;
  s.channels = 3;
  StreamInfo in;
  in.name = "features";
  Runner scaled({s});
  EXPECT_EQ(scaled.transformer().output_stream(in).sample_shape, (std::vector<size_t>{3, 5, 7}));
  Runner planar({s, ImageTransposeOptions{}});
  EXPECT_EQ(planar.transformer().output_stream(in).sample_shape, (std::vector<size_t>{5, 7, 3}));
  Runner cropped({s, crop()});
  EXPECT_TRUE(cropped.transformer().output_stream(in).sample_shape.empty());
  Runner plain({ImageTransposeOptions{}});
  EXPECT_TRUE(plain.transformer().output_stream(in).sample_shape.empty());
}

TEST(ImageTransforms, ImageTransformsAfterTransposeAreRejected) {
  Runner r({ImageTransposeOptions{}, crop()});
  EXPECT_THROW(r.run(gradient()), FormatError);
}

TEST(ImageTransforms, EnginesPersistAcrossBatches) {
  ImageCropOptions o = crop(ImageCropOptions::Type::kRandomSide);
  o.crop_width = o.crop_height = 2;
  o.hflip = false;
  Runner r({o});
  r.run(gradient());  // draws 2357136044, 2546248239
  // next: x from 3071714933 / 858993459 = 3, y from 3626093760 / 1431655765 = 2
  EXPECT_EQ(r.run(gradient()).values, gradient_rect(3, 2, 2, 2));
}

// Options built in code (a TransformSpec of a ReaderSpec, cntkio's Python module) never pass the config
// route's range checks: the registered types check them when they create the transformer.
TEST(ImageTransforms, TypedOptionsOutOfRangeAreConfigErrorsNamingTheKey) {
  auto key_of_error = [](const char* type, std::any options) -> std::string {
    try {
      find_transform_type(type)->create(TransformSpec{type, "", std::move(options)}, StreamInfo{},
                                        TransformContext{});
    } catch (const ConfigError& e) {
      return e.key_path();
    }
    return "(no error)";
  };
  ImageCropOptions side = crop();
  side.side_ratio_min = side.side_ratio_max = 1.5;
  EXPECT_EQ(key_of_error("Crop", side), "sideRatio");
  ImageCropOptions both = crop();
  both.side_ratio_min = both.side_ratio_max = both.area_ratio_min = both.area_ratio_max = 0.5;
  EXPECT_EQ(key_of_error("Crop", both), "areaRatio");
  ImageCropOptions negative = crop();
  negative.crop_width = -4;
  EXPECT_EQ(key_of_error("Crop", negative), "cropSize");
  ImageCropOptions aspect = crop();
  aspect.aspect_ratio_min = 0;
  EXPECT_EQ(key_of_error("Crop", aspect), "aspectRatio");
  aspect.aspect_ratio_min = 0.5;  // CNTK's range is (0, 1] (the crop is turned either way at random)
  aspect.aspect_ratio_max = 1.5;
  EXPECT_EQ(key_of_error("Crop", aspect), "aspectRatio");
  ImageScaleOptions scale;
  scale.width = scale.height = 4;
  scale.channels = 5;
  EXPECT_EQ(key_of_error("Scale", scale), "width");
  scale.channels = 3;
  scale.pad_value = -2;
  EXPECT_EQ(key_of_error("Scale", scale), "padValue");
  ImageColorOptions color;
  color.contrast_radius = 2;
  EXPECT_EQ(key_of_error("Color", color), "contrastRadius");
  scale.pad_value = -1;
  EXPECT_EQ(key_of_error("Scale", scale), "(no error)");
  EXPECT_EQ(key_of_error("Crop", crop()), "(no error)");
}

}  // namespace
}  // namespace cntkio::image
