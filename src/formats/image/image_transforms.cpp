// The image transform steps (image_steps.hpp): Crop, Scale, Color, Intensity, Mean and Transpose.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <opencv2/imgproc.hpp>
#include <optional>

#include "cntkio/errors.hpp"
#include "core/input_file.hpp"
#include "formats/image/image_random.hpp"
#include "formats/image/image_steps.hpp"

namespace cntkio::image {

int float_depth(ElementType type) {
  return type == ElementType::kFloat ? CV_32F : CV_64F;
}

namespace {

void require_interleaved(const Sample& sample, const char* name) {
  if (sample.planar) {
    throw Error(std::string("The ") + name +
                " transform needs an interleaved (HWC) image, but it follows a Transpose transform.");
  }
}

// Converts to the floating-point type of `precision` unless the data already has it.
void to_float(cv::Mat& mat, ElementType precision) {
  const int depth = float_depth(precision);
  if (mat.depth() != depth) {
    cv::Mat converted;
    mat.convertTo(converted, depth);
    mat = converted;
  } else if (!mat.isContinuous()) {
    mat = mat.clone();
  }
}

// The inflated bytes of the gzip data `compressed` (the file `path`). FormatError if they are not valid gzip
// or inflate past 256 MiB (no mean or eigen file comes near; a gzip bomb must not take the memory).
std::string gunzip(const std::string& compressed, const std::string& path) {
  constexpr size_t kMaxInflated = 256u << 20;
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) throw Error("zlib: inflateInit2 failed");
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  int status = Z_OK;
  while (status == Z_OK) {
    const size_t done = out.size();
    if (done >= kMaxInflated) break;
    out.resize(std::min(kMaxInflated, std::max<size_t>(4 * compressed.size(), done * 2 + 65536)));
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + done);
    stream.avail_out = static_cast<uInt>(out.size() - done);
    status = inflate(&stream, Z_NO_FLUSH);
    out.resize(out.size() - stream.avail_out);
  }
  inflateEnd(&stream);
  if (status != Z_STREAM_END) {
    SourceLocation where;
    where.file = path;
    throw FormatError(status == Z_OK
                          ? "The gzip file inflates to more than 256 MiB."
                          : "The gzip file is damaged (zlib status " + std::to_string(status) + ").",
                      where);
  }
  return out;
}

// An OpenCV FileStorage (XML, YAML or JSON) parsed from the bytes of `path`, read through core::InputFile
// (OpenCV is never handed the path: a FIFO would block it). IoError "Could not open file: <path>" when the
// file cannot be read; FormatError with the same text when OpenCV cannot parse it.
cv::FileStorage open_storage(const std::string& path) {
  const std::string open_failure = "Could not open file: " + path;
  std::string content = core::read_input_file(path, open_failure);
  // OpenCV reads gzip-compressed storage (`mean.xml.gz`) only from a path: inflate it here.
  if (content.size() >= 2 && static_cast<unsigned char>(content[0]) == 0x1f &&
      static_cast<unsigned char>(content[1]) == 0x8b) {
    content = gunzip(content, path);
  }
  cv::FileStorage storage;
  try {
    storage.open(content, cv::FileStorage::READ | cv::FileStorage::MEMORY);
  } catch (const cv::Exception&) {
  }
  if (!storage.isOpened()) {
    SourceLocation where;
    where.file = path;
    throw FormatError(open_failure, where);
  }
  return storage;
}

// ---------------------------------------------------------------------------------------------------- Crop

class CropTransform final : public ImageTransform {
 public:
  explicit CropTransform(const ImageCropOptions& options) : options_(options), engines_(options.seed) {
    side_ = options_.side_ratio_min != 0 || options_.side_ratio_max != 0;
    area_ = options_.area_ratio_min != 0 || options_.area_ratio_max != 0;
    if (options_.type == ImageCropOptions::Type::kMultiView10) options_.hflip = false;
  }

  void start_batch(size_t batch_size) override { engines_.grow(batch_size); }
  const char* name() const override { return "Crop"; }
  void update_layout(StreamLayout& layout) const override { layout.known = false; }
  EngineSet* random_engines() override { return draws() ? &engines_ : nullptr; }

  void apply(Sample& sample, size_t slot) override {
    require_interleaved(sample, name());
    Engine& engine = engines_.at(slot);
    const int height = sample.mat.rows;
    const int width = sample.mat.cols;
    cv::Rect rect = centred_rect(height, width, engine);
    int view = 0;
    switch (options_.type) {
      case ImageCropOptions::Type::kCenter:
        break;
      case ImageCropOptions::Type::kRandomSide:
      case ImageCropOptions::Type::kRandomArea:
        rect.x = uniform_int(engine, 0, width - rect.width);
        rect.y = uniform_int(engine, 0, height - rect.height);
        break;
      case ImageCropOptions::Type::kMultiView10: {
        view = static_cast<int>(sample.copy_id % 10);
        switch (view % 5) {
          case 0:
            rect.x = 0;
            rect.y = 0;
            break;
          case 1:
            rect.x = width - rect.width;
            rect.y = 0;
            break;
          case 2:
            rect.x = 0;
            rect.y = height - rect.height;
            break;
          case 3:
            rect.x = width - rect.width;
            rect.y = height - rect.height;
            break;
          default:
            break;  // centre
        }
        break;
      }
    }
    cv::Mat cropped = sample.mat(rect);
    if ((options_.hflip && bernoulli_half(engine)) || view >= 5) {
      cv::Mat flipped;  // never in place: the source may be shared (Base64 chunks)
      cv::flip(cropped, flipped, 1);
      cropped = flipped;
    }
    sample.mat = cropped;
  }

 private:
  // Whether any image can make this crop draw (the cases of spec image.md §9.1).
  bool draws() const {
    if (options_.type == ImageCropOptions::Type::kRandomSide ||
        options_.type == ImageCropOptions::Type::kRandomArea || options_.hflip) {
      return true;
    }
    if (options_.crop_width > 0 && options_.crop_height > 0) return false;
    const bool uniratio = options_.jitter_uniratio;
    const bool ratio_drawn = uniratio && ((side_ && options_.side_ratio_min != options_.side_ratio_max) ||
                                          (area_ && options_.area_ratio_min != options_.area_ratio_max));
    const bool flip_drawn = options_.aspect_ratio_min != 1.0 ||
                            (uniratio && options_.aspect_ratio_min != options_.aspect_ratio_max);
    return ratio_drawn || flip_drawn;
  }

  double jitter(Engine& engine, double lo, double hi) const {
    if (!options_.jitter_uniratio || lo == hi) return lo;
    return uniform_real(engine, lo, hi);
  }

  static cv::Rect centred(int height, int width, int w, int h) {
    return cv::Rect((width - w) / 2, (height - h) / 2, w, h);
  }

  cv::Rect centred_rect(int height, int width, Engine& engine) const {
    if (options_.crop_width > 0 && options_.crop_height > 0) {
      const int w = std::min(width, options_.crop_width);
      const int h = std::min(height, options_.crop_height);
      return centred(height, width, w, h);
    }
    int w = width;
    int h = height;
    for (int attempt = 0; attempt < 10; ++attempt) {
      if (side_) {
        const double s = jitter(engine, options_.side_ratio_min, options_.side_ratio_max);
        w = h = static_cast<int>(std::round(std::min(height, width) * s));
      } else if (area_) {
        const double a = jitter(engine, options_.area_ratio_min, options_.area_ratio_max);
        w = h = static_cast<int>(std::round(std::sqrt(height * width * a)));
      }
      const double ratio = jitter(engine, options_.aspect_ratio_min, options_.aspect_ratio_max);
      if (ratio != 1.0) {
        const double area = static_cast<double>(w) * h;
        if (bernoulli_half(engine)) {
          w = static_cast<int>(std::sqrt(area * ratio));
          h = static_cast<int>(std::sqrt(area / ratio));
        } else {
          h = static_cast<int>(std::sqrt(area * ratio));
          w = static_cast<int>(std::sqrt(area / ratio));
        }
      }
      if (w <= width && h <= height) return centred(height, width, w, h);
    }
    return cv::Rect(0, 0, width, height);
  }

  ImageCropOptions options_;
  EngineSet engines_;
  bool side_ = false;
  bool area_ = false;
};

// --------------------------------------------------------------------------------------------------- Scale

class ScaleTransform final : public ImageTransform {
 public:
  explicit ScaleTransform(const ImageScaleOptions& options) : options_(options) {
    switch (options.interpolation) {
      case ImageScaleOptions::Interpolation::kNearest:
        interpolation_ = cv::INTER_NEAREST;
        break;
      case ImageScaleOptions::Interpolation::kLinear:
        interpolation_ = cv::INTER_LINEAR;
        break;
      case ImageScaleOptions::Interpolation::kCubic:
        interpolation_ = cv::INTER_CUBIC;
        break;
      case ImageScaleOptions::Interpolation::kLanczos:
        interpolation_ = cv::INTER_LANCZOS4;
        break;
    }
  }

  const char* name() const override { return "Scale"; }
  void update_layout(StreamLayout& layout) const override {
    layout.known = true;
    layout.planar = false;
    layout.channels = options_.channels;
    layout.width = options_.width;
    layout.height = options_.height;
  }

  void apply(Sample& sample, size_t /*slot*/) override {
    require_interleaved(sample, name());
    const int target_w = static_cast<int>(options_.width);
    const int target_h = static_cast<int>(options_.height);
    const int w = sample.mat.cols;
    const int h = sample.mat.rows;
    cv::Mat out;
    if (options_.mode == ImageScaleOptions::Mode::kFill) {
      cv::resize(sample.mat, out, cv::Size(target_w, target_h), 0, 0, interpolation_);
      sample.mat = out;
      return;
    }
    int new_w = 0;
    int new_h = 0;
    const bool fit_width = options_.mode == ImageScaleOptions::Mode::kCrop ? w < h : w > h;
    if (fit_width) {
      new_w = target_w;
      new_h = static_cast<int>(std::round(static_cast<double>(h) * target_w / w));
    } else {
      new_h = target_h;
      new_w = static_cast<int>(std::round(static_cast<double>(w) * target_h / h));
    }
    const bool crop = options_.mode == ImageScaleOptions::Mode::kCrop;
    if (crop ? (new_w < target_w || new_h < target_h) : (new_w > target_w || new_h > target_h)) {
      // CNTK computes the offsets in unsigned arithmetic here and OpenCV then fails.
      throw Error("Scale with scaleMode=" + std::string(crop ? "crop" : "pad") + " cannot map a " +
                  std::to_string(w) + "x" + std::to_string(h) + " image onto " + std::to_string(target_w) +
                  "x" + std::to_string(target_h) + " (the resized image would be " + std::to_string(new_w) +
                  "x" + std::to_string(new_h) + ").");
    }
    cv::Mat resized;
    cv::resize(sample.mat, resized, cv::Size(new_w, new_h), 0, 0, interpolation_);
    if (crop) {
      sample.mat = resized(cv::Rect((new_w - target_w) / 2, (new_h - target_h) / 2, target_w, target_h));
      return;
    }
    const int top = (target_h - new_h) / 2;
    const int bottom = target_h - top - new_h;
    const int left = (target_w - new_w) / 2;
    const int right = target_w - left - new_w;
    if (options_.pad_value < 0) {
      cv::copyMakeBorder(resized, out, top, bottom, left, right, cv::BORDER_REPLICATE);
    } else {
      // CNTK hands its integer padValue to OpenCV as the border colour, which makes it Scalar(v, 0, 0, 0):
      // the value in the first channel (blue), zeros in the others. cntkio pads the same way.
      cv::copyMakeBorder(resized, out, top, bottom, left, right, cv::BORDER_CONSTANT,
                         cv::Scalar(options_.pad_value, 0, 0, 0));
    }
    sample.mat = out;
  }

 private:
  ImageScaleOptions options_;
  int interpolation_ = cv::INTER_LINEAR;
};

// --------------------------------------------------------------------------------------------------- Color

class ColorTransform final : public ImageTransform {
 public:
  ColorTransform(const ImageColorOptions& options, ElementType precision)
      : options_(options), precision_(precision), engines_(options.seed) {}

  void start_batch(size_t batch_size) override { engines_.grow(batch_size); }
  const char* name() const override { return "Color"; }
  EngineSet* random_engines() override {
    const bool draws =
        options_.brightness_radius > 0 || options_.contrast_radius > 0 || options_.saturation_radius > 0;
    return draws ? &engines_ : nullptr;
  }

  void apply(Sample& sample, size_t slot) override {
    require_interleaved(sample, name());
    if (options_.brightness_radius == 0 && options_.contrast_radius == 0 && options_.saturation_radius == 0) {
      return;
    }
    to_float(sample.mat, precision_);
    Engine& engine = engines_.at(slot);
    if (precision_ == ElementType::kFloat) {
      apply_typed<float>(sample.mat, engine);
    } else {
      apply_typed<double>(sample.mat, engine);
    }
  }

 private:
  template <typename T>
  void apply_typed(cv::Mat& mat, Engine& engine) {
    if (options_.brightness_radius > 0 || options_.contrast_radius > 0) {
      T beta = 0;
      if (options_.brightness_radius > 0) {
        const double b = uniform_real(engine, -options_.brightness_radius, options_.brightness_radius);
        const cv::Scalar sums = cv::sum(mat);
        const double total = sums[0] + sums[1] + sums[2] + sums[3];
        beta = static_cast<T>(b * total / (mat.rows * mat.cols * mat.channels()));
      }
      T alpha = 1;
      if (options_.contrast_radius > 0) {
        alpha = static_cast<T>(1 + uniform_real(engine, -options_.contrast_radius, options_.contrast_radius));
      }
      T* p = mat.ptr<T>();
      const size_t n = mat.total() * static_cast<size_t>(mat.channels());
      for (size_t i = 0; i < n; ++i) p[i] = std::min(std::max(p[i] * alpha + beta, T(0)), T(255));
    }
    if (options_.saturation_radius > 0 && mat.channels() == 3) {
      // As CNTK: the ratio stays a double, the product is rounded to the element type.
      const double ratio = 1 + uniform_real(engine, -options_.saturation_radius, options_.saturation_radius);
      cv::Mat hsv;
      cv::cvtColor(mat, hsv, cv::COLOR_BGR2HSV);
      T* p = hsv.ptr<T>();
      const size_t pixels = hsv.total();
      for (size_t i = 0; i < pixels; ++i) p[3 * i + 1] = std::min(static_cast<T>(p[3 * i + 1] * ratio), T(1));
      cv::cvtColor(hsv, mat, cv::COLOR_HSV2BGR);
    }
  }

  ImageColorOptions options_;
  ElementType precision_;
  EngineSet engines_;
};

// ----------------------------------------------------------------------------------------------- Intensity

class IntensityTransform final : public ImageTransform {
 public:
  IntensityTransform(const ImageIntensityOptions& options, ElementType precision)
      : options_(options), precision_(precision), engines_(options.seed) {
    enabled_ = !options_.file.empty() && options_.std_dev != 0;
    // CNTK opens and checks a named file even when intensityStdDev is 0 (which then changes nothing).
    if (options_.file.empty()) return;
    SourceLocation where;
    where.file = options_.file;
    cv::FileStorage storage = open_storage(options_.file);
    cv::Mat values, vectors;
    storage["EigVal"] >> values;
    if (values.rows != 1 || values.cols != 3 || values.channels() != 1) {
      throw FormatError("Invalid EigVal data in file: " + options_.file, where);
    }
    storage["EigVec"] >> vectors;
    if (vectors.rows != 3 || vectors.cols != 3 || vectors.channels() != 1) {
      throw FormatError("Invalid EigVec data in file: " + options_.file, where);
    }
    values.convertTo(eigen_values_, CV_32F);
    vectors.convertTo(eigen_vectors_, CV_32F);
  }

  void start_batch(size_t batch_size) override { engines_.grow(batch_size); }
  const char* name() const override { return "Intensity"; }
  EngineSet* random_engines() override { return enabled_ ? &engines_ : nullptr; }

  void apply(Sample& sample, size_t slot) override {
    require_interleaved(sample, name());
    if (!enabled_) return;
    to_float(sample.mat, precision_);
    Engine& engine = engines_.at(slot);
    cv::Mat alpha(1, 3, CV_32F);
    for (int k = 0; k < 3; ++k) {
      alpha.at<float>(0, k) =
          normal_float(engine, static_cast<float>(options_.std_dev)) * eigen_values_.at<float>(0, k);
    }
    const cv::Mat shift = eigen_vectors_ * alpha.t();  // 3 x 1, in the RGB order of the eigen basis
    if (precision_ == ElementType::kFloat) {
      shift_typed<float>(sample.mat, shift);
    } else {
      shift_typed<double>(sample.mat, shift);
    }
  }

 private:
  template <typename T>
  static void shift_typed(cv::Mat& mat, const cv::Mat& shift) {
    const int channels = mat.channels();
    std::array<float, 4> by_channel{};
    for (int c = 0; c < channels && c < 4; ++c)
      by_channel[static_cast<size_t>(c)] = shift.at<float>(channels - 1 - c, 0);
    T* p = mat.ptr<T>();
    const size_t pixels = mat.total();
    for (size_t i = 0; i < pixels; ++i) {
      for (int c = 0; c < channels; ++c) {
        T& x = p[i * static_cast<size_t>(channels) + static_cast<size_t>(c)];
        x = std::min(std::max(x + by_channel[static_cast<size_t>(c)], T(0)), T(255));
      }
    }
  }

  ImageIntensityOptions options_;
  ElementType precision_;
  EngineSet engines_;
  bool enabled_ = false;
  cv::Mat eigen_values_;
  cv::Mat eigen_vectors_;
};

// ---------------------------------------------------------------------------------------------------- Mean

class MeanTransform final : public ImageTransform {
 public:
  MeanTransform(const ImageMeanOptions& options, ElementType precision, std::shared_ptr<core::Logger> logger)
      : precision_(precision), logger_(std::move(logger)) {
    if (options.file.empty()) return;
    SourceLocation where;
    where.file = options.file;
    cv::FileStorage storage = open_storage(options.file);
    int channels = 0, rows = 0, cols = 0;
    storage["Channel"] >> channels;
    storage["Row"] >> rows;
    storage["Col"] >> cols;
    cv::Mat mean;
    storage["MeanImg"] >> mean;
    const auto expected = static_cast<int64_t>(channels) * rows * cols;
    if (channels <= 0 || rows <= 0 || cols <= 0 ||
        static_cast<int64_t>(mean.total()) * mean.channels() != expected) {
      throw FormatError("Invalid data in file: " + options.file, where);
    }
    mean_ = mean.reshape(channels, rows).clone();
  }

  const char* name() const override { return "Mean"; }

  void apply(Sample& sample, size_t /*slot*/) override {
    require_interleaved(sample, name());
    if (mean_.empty()) return;
    if (mean_.rows != sample.mat.rows || mean_.cols != sample.mat.cols) {
      // One message, as CNTK prints it: the two lines of concurrent transforms do not interleave.
      logger_->log(core::LogLevel::kWarning,
                   "WARNING: Mean file does not match the size of the input image, will be ignored.\n"
                   "Please remove mean transformation from the config.");
      return;
    }
    to_float(sample.mat, precision_);
    cv::Mat out;
    cv::subtract(sample.mat, mean_, out);
    sample.mat = out;
  }

 private:
  ElementType precision_;
  std::shared_ptr<core::Logger> logger_;
  cv::Mat mean_;
};

// ----------------------------------------------------------------------------------------------- Transpose

template <typename Out, typename In>
void interleaved_to_planar(const cv::Mat& in, Out* out) {
  const int channels = in.channels();
  const size_t plane = static_cast<size_t>(in.rows) * static_cast<size_t>(in.cols);
  for (int y = 0; y < in.rows; ++y) {
    const In* row = in.ptr<In>(y);
    const size_t base = static_cast<size_t>(y) * static_cast<size_t>(in.cols);
    if (channels == 3) {
      Out* b = out + base;
      Out* g = out + plane + base;
      Out* r = out + 2 * plane + base;
      for (int x = 0; x < in.cols; ++x) {
        b[x] = static_cast<Out>(row[3 * x]);
        g[x] = static_cast<Out>(row[3 * x + 1]);
        r[x] = static_cast<Out>(row[3 * x + 2]);
      }
    } else {
      for (int x = 0; x < in.cols; ++x) {
        for (int c = 0; c < channels; ++c) {
          out[static_cast<size_t>(c) * plane + base + static_cast<size_t>(x)] =
              static_cast<Out>(row[x * channels + c]);
        }
      }
    }
  }
}

template <typename Out>
void to_planar(const cv::Mat& in, Out* out) {
  switch (in.depth()) {
    case CV_8U:
      interleaved_to_planar<Out, uint8_t>(in, out);
      break;
    case CV_32F:
      interleaved_to_planar<Out, float>(in, out);
      break;
    case CV_64F:
      interleaved_to_planar<Out, double>(in, out);
      break;
    default:
      throw Error("Currently Transpose transform only works with images.");
  }
}

class TransposeTransform final : public ImageTransform {
 public:
  explicit TransposeTransform(ElementType precision) : precision_(precision) {}
  const char* name() const override { return "Transpose"; }
  void update_layout(StreamLayout& layout) const override {
    if (layout.known) layout.planar = true;
  }

  void apply(Sample& sample, size_t /*slot*/) override {
    require_interleaved(sample, name());
    const cv::Mat& in = sample.mat;
    const int channels = in.channels();
    cv::Mat out(channels * in.rows, in.cols, float_depth(precision_));
    if (precision_ == ElementType::kFloat) {
      to_planar(in, out.ptr<float>());
    } else {
      to_planar(in, out.ptr<double>());
    }
    sample.mat = out;
    sample.planar = true;
    sample.channels = channels;
  }

 private:
  ElementType precision_;
};

}  // namespace

std::shared_ptr<ImageTransform> make_image_step(const ImageTransformOptions& options, ElementType precision,
                                                std::shared_ptr<core::Logger> logger) {
  if (const auto* crop = std::get_if<ImageCropOptions>(&options))
    return std::make_shared<CropTransform>(*crop);
  if (const auto* scale = std::get_if<ImageScaleOptions>(&options))
    return std::make_shared<ScaleTransform>(*scale);
  if (const auto* color = std::get_if<ImageColorOptions>(&options)) {
    return std::make_shared<ColorTransform>(*color, precision);
  }
  if (const auto* intensity = std::get_if<ImageIntensityOptions>(&options)) {
    return std::make_shared<IntensityTransform>(*intensity, precision);
  }
  if (const auto* mean = std::get_if<ImageMeanOptions>(&options)) {
    return std::make_shared<MeanTransform>(*mean, precision, std::move(logger));
  }
  return std::make_shared<TransposeTransform>(precision);
}

}  // namespace cntkio::image
