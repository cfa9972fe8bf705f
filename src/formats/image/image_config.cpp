// Image deserializer and transform options from CNTK config sections (spec image.md §2, §9).
#include <cmath>
#include <limits>

#include "cntkio/errors.hpp"
#include "cntkio/image.hpp"
#include "core/text.hpp"
#include "formats/image/image_transforms.hpp"

namespace cntkio {
namespace {

// CNTK's floatargvector `min[:max]` (one value: min = max), each value parsed as a 32-bit float.
std::pair<double, double> float_pair(const Config& record, std::string_view key, double def) {
  if (!record.exists(key)) return {def, def};
  std::vector<std::string> values = record.get_array(key);
  if (values.empty() || values.size() > 2) {
    throw record.error(key, "'" + std::string(key) + "' takes one value or two values separated by ':'.");
  }
  const std::string what = record.path() + "." + std::string(key);
  const auto lo = static_cast<double>(static_cast<float>(Config::to_double(values[0], what)));
  const auto hi =
      values.size() == 2 ? static_cast<double>(static_cast<float>(Config::to_double(values[1], what))) : lo;
  return {lo, hi};
}

// image::check_transform_options, its ConfigError located at the key's text in `record`.
template <class Options>
void check_located(const Config& record, const Options& options) {
  try {
    image::check_transform_options(ImageTransformOptions(options));
  } catch (const ConfigError& e) {
    throw record.error(e.key_path(), e.cntk_text());
  }
}

ImageCropOptions crop_options(const Config& record) {
  ImageCropOptions o;
  const std::string type = core::to_lower(record.get_string("cropType", ""));
  if (type.empty() || type == "center") {
    o.type = ImageCropOptions::Type::kCenter;
  } else if (type == "randomside") {
    o.type = ImageCropOptions::Type::kRandomSide;
  } else if (type == "randomarea") {
    o.type = ImageCropOptions::Type::kRandomArea;
  } else if (type == "multiview10") {
    o.type = ImageCropOptions::Type::kMultiView10;
  } else {
    throw record.error("cropType", "Invalid crop type: " + record.get_string("cropType") + ".");
  }
  if (record.exists("cropSize")) {
    std::vector<std::string> values = record.get_array("cropSize");
    if (values.empty() || values.size() > 2) {
      throw record.error("cropSize", "'cropSize' takes one value or two values (width:height).");
    }
    const std::string what = record.path() + ".cropSize";
    const int64_t w = Config::to_int(values[0], what);
    const int64_t h = values.size() == 2 ? Config::to_int(values[1], what) : w;
    if (w < 0 || h < 0 || w > std::numeric_limits<int>::max() || h > std::numeric_limits<int>::max()) {
      throw record.error("cropSize", "Invalid cropSize value, must be >= 0");
    }
    o.crop_width = static_cast<int>(w);
    o.crop_height = static_cast<int>(h);
  }
  std::tie(o.side_ratio_min, o.side_ratio_max) = float_pair(record, "sideRatio", 0);
  std::tie(o.area_ratio_min, o.area_ratio_max) = float_pair(record, "areaRatio", 0);
  std::tie(o.aspect_ratio_min, o.aspect_ratio_max) = float_pair(record, "aspectRatio", 1);
  const std::string jitter = core::to_lower(record.get_string("jitterType", ""));
  if (jitter.empty() || jitter == "none") {
    o.jitter_uniratio = false;
  } else if (jitter == "uniratio") {
    o.jitter_uniratio = true;
  } else {
    throw record.error("jitterType", "Invalid jitter type: " + record.get_string("jitterType") + ".");
  }
  const bool random =
      o.type == ImageCropOptions::Type::kRandomSide || o.type == ImageCropOptions::Type::kRandomArea;
  o.hflip = record.exists_current("hflip") ? record.get_bool("hflip", random) : random;
  if (o.type == ImageCropOptions::Type::kMultiView10) o.hflip = false;
  o.seed = record.get_uint("seed", 0);
  check_located(record, o);
  return o;
}

ImageScaleOptions scale_options(const Config& record) {
  ImageScaleOptions o;
  o.width = record.get_uint("width");
  o.height = record.get_uint("height");
  o.channels = record.get_uint("channels");
  const std::string interpolation = core::to_lower(record.get_string("interpolations", "linear"));
  if (interpolation == "nearest") {
    o.interpolation = ImageScaleOptions::Interpolation::kNearest;
  } else if (interpolation == "linear") {
    o.interpolation = ImageScaleOptions::Interpolation::kLinear;
  } else if (interpolation == "cubic") {
    o.interpolation = ImageScaleOptions::Interpolation::kCubic;
  } else if (interpolation == "lanczos") {
    o.interpolation = ImageScaleOptions::Interpolation::kLanczos;
  } else {
    throw record.error("interpolations",
                       "Invalid interpolations value, must be nearest, cubic, lanczos or linear");
  }
  const std::string mode = record.get_string("scaleMode", "fill");
  if (mode == "fill") {
    o.mode = ImageScaleOptions::Mode::kFill;
  } else if (mode == "crop") {
    o.mode = ImageScaleOptions::Mode::kCrop;
  } else if (mode == "pad") {
    o.mode = ImageScaleOptions::Mode::kPad;
  } else {
    throw record.error("scaleMode", "Invalid scaleMode value, must be fill, crop or pad (all lower case)");
  }
  o.pad_value = record.get_double("padValue", -1);
  check_located(record, o);
  return o;
}

ImageColorOptions color_options(const Config& record) {
  ImageColorOptions o;
  o.brightness_radius = record.get_double("brightnessRadius", 0);
  o.contrast_radius = record.get_double("contrastRadius", 0);
  o.saturation_radius = record.get_double("saturationRadius", 0);
  o.seed = record.get_uint("seed", 0);
  check_located(record, o);
  return o;
}

ImageIntensityOptions intensity_options(const Config& record) {
  ImageIntensityOptions o;
  o.std_dev = record.get_double("intensityStdDev", 0);
  o.file = record.get_string("intensityFile", "");
  o.seed = record.get_uint("seed", 0);
  return o;
}

ImageMeanOptions mean_options(const Config& record) {
  ImageMeanOptions o;
  o.file = record.get_string("meanFile", "");
  return o;
}

ImageTransformOptions transform_options_of(const Config& record) {
  const std::string type = record.get_string("type");
  if (type == "Crop") return crop_options(record);
  if (type == "Scale") return scale_options(record);
  if (type == "Color") return color_options(record);
  if (type == "Intensity") return intensity_options(record);
  if (type == "Mean") return mean_options(record);
  if (type == "Transpose") return ImageTransposeOptions{};
  throw record.error("type", "Unknown transform type '" + type +
                                 "' (supported: Crop, Scale, Color, Intensity, Mean, Transpose).");
}

// maxImagePixels / maxImageBytes (docs/formats/image.md, "Size limits").
void read_limits(const Config& section, ImageOptions& options) {
  options.max_image_pixels = section.get_uint("maxImagePixels", options.max_image_pixels);
  if (options.max_image_pixels == 0)
    throw section.error("maxImagePixels", "maxImagePixels must be at least 1.");
  options.max_image_bytes = section.get_uint("maxImageBytes", options.max_image_bytes);
  if (options.max_image_bytes == 0) throw section.error("maxImageBytes", "maxImageBytes must be at least 1.");
}

int trace_level_of(const Config& section) {
  if (section.exists("traceLevel")) return static_cast<int>(section.get_uint("traceLevel", 1));
  return 1;
}

}  // namespace

void image::check_transform_options(const ImageTransformOptions& options) {
  if (const auto* crop = std::get_if<ImageCropOptions>(&options)) {
    if (crop->crop_width < 0 || crop->crop_height < 0)
      throw ConfigError("Invalid cropSize value, must be >= 0", "cropSize");
    const bool side = crop->side_ratio_min != 0 || crop->side_ratio_max != 0;
    const bool area = crop->area_ratio_min != 0 || crop->area_ratio_max != 0;
    // CNTK's checks and texts, in its order (aspectRatio too must lie in (0, 1]).
    auto check_ratio = [](const char* key, const char* name, double lo, double hi) {
      if (!(lo > 0 && hi <= 1 && lo <= hi)) {
        throw ConfigError(std::string("Invalid ") + key + " value, must be > 0 and <= 1. " + name +
                              "Min must <= " + name + "Max",
                          key);
      }
    };
    if (side) check_ratio("sideRatio", "side", crop->side_ratio_min, crop->side_ratio_max);
    if (area) check_ratio("areaRatio", "area", crop->area_ratio_min, crop->area_ratio_max);
    if (side && area)
      throw ConfigError("sideRatio and areaRatio cannot be specified simultaneously", "areaRatio");
    check_ratio("aspectRatio", "aspect", crop->aspect_ratio_min, crop->aspect_ratio_max);
  } else if (const auto* scale = std::get_if<ImageScaleOptions>(&options)) {
    const auto limit = static_cast<uint64_t>(std::numeric_limits<int>::max());
    if (scale->width == 0 || scale->height == 0 || scale->channels == 0 || scale->width > limit ||
        scale->height > limit || scale->channels > 4 || scale->width * scale->height > limit) {
      throw ConfigError("Invalid image dimensions.", "width");
    }
    if (scale->pad_value < -1 || std::isnan(scale->pad_value)) {
      throw ConfigError("Invalid padValue value, must be -1 (replicates border) or >= 0 (constant)",
                        "padValue");
    }
  } else if (const auto* color = std::get_if<ImageColorOptions>(&options)) {
    auto check_radius = [](const char* key, double r) {
      if (!(r >= 0.0 && r <= 1.0)) throw ConfigError(std::string(key) + " must be >= 0.0 and <= 1.0", key);
    };
    check_radius("brightnessRadius", color->brightness_radius);
    check_radius("contrastRadius", color->contrast_radius);
    check_radius("saturationRadius", color->saturation_radius);
  }
}

ImageTransformOptions image_transform_options_from_config(const Config& record) {
  return transform_options_of(record);
}

ImageOptions image_options_from_config(const Config& section, bool base64) {
  ImageOptions options;
  options.base64 = base64;
  options.file = section.get_string("file");
  if (!section.exists_current("input")) {
    throw ConfigError("The image deserializer section has no 'input' block.", section.path() + ".input");
  }
  const Config input = section.get_block("input");
  std::vector<std::string> features, labels;
  for (const std::string& name : input.keys()) {
    const Config stream = input.get_block(name);
    if (stream.exists_current("transforms")) features.push_back(name);
    if (stream.exists_current("labelDim")) labels.push_back(name);
  }
  if (features.empty()) {
    throw ConfigError("ImageDeserializerBase requires transforms parameter.", input.path());
  }
  if (features.size() != 1 || labels.size() != 1) {
    throw ConfigError("Please specify a single feature and label stream. '" +
                          std::to_string(features.size()) + "' features , '" + std::to_string(labels.size()) +
                          "' labels found.",
                      input.path());
  }
  options.feature_stream = features[0];
  options.label_stream = labels[0];
  options.label_dim = input.get_block(labels[0]).get_uint("labelDim");
  // The composite reader inserts `precision`; anything but "float" means double (spec image.md §2.1).
  options.element_type =
      section.get_string("precision", "float") == "float" ? ElementType::kFloat : ElementType::kDouble;
  options.grayscale = section.get_bool("grayscale", false);
  options.multi_view = section.get_bool("multiViewCrop", false);
  options.trace_level = trace_level_of(section);
  read_limits(section, options);
  return options;
}

ImageReaderSettings image_reader_settings_from_config(const Config& reader) {
  ImageReaderSettings settings;
  ImageOptions& options = settings.options;
  std::vector<std::string> features, labels;
  for (const std::string& name : reader.keys()) {
    Config block;
    try {
      block = reader.get_block(name);
    } catch (const ConfigError&) {
      continue;  // not a sub-record
    }
    if (block.exists_current("width")) features.push_back(name);
    if (block.exists_current("labelDim")) labels.push_back(name);
  }
  if (features.size() != 1 || labels.size() != 1) {
    throw ConfigError("ImageReader currently supports a single feature and label stream. '" +
                          std::to_string(features.size()) + "' features , '" + std::to_string(labels.size()) +
                          "' labels found.",
                      reader.path());
  }
  const Config feature = reader.get_block(features[0]);
  options.feature_stream = features[0];
  options.label_stream = labels[0];
  options.label_dim = reader.get_block(labels[0]).get_uint("labelDim");
  options.file = reader.get_string("file");

  const std::string precision = reader.get_string("precision", "float");
  if (precision != "float" && precision != "double") {
    throw reader.error("precision", "precision must be 'float' or 'double', not '" + precision + "'.");
  }
  options.element_type = precision == "float" ? ElementType::kFloat : ElementType::kDouble;

  const std::string format = core::to_lower(feature.get_string("mbFormat", "nchw"));
  bool planar = true;
  if (format == "nchw") {
    planar = true;
  } else if (format == "nhwc" || format == "legacy") {
    planar = false;
  } else {
    throw feature.error("mbFormat", "ImageReader does not support the minibatch format '" + format +
                                        "' (supported: nchw, nhwc, legacy).");
  }

  const ImageScaleOptions scale = scale_options(feature);
  ImageCropOptions crop = crop_options(feature);
  options.multi_view = crop.type == ImageCropOptions::Type::kMultiView10;
  options.grayscale = reader.get_bool("grayscale", scale.channels == 1);
  settings.transforms.emplace_back(crop);
  settings.transforms.emplace_back(scale);
  settings.transforms.emplace_back(color_options(feature));
  settings.transforms.emplace_back(intensity_options(feature));
  settings.transforms.emplace_back(mean_options(feature));
  if (planar) settings.transforms.emplace_back(ImageTransposeOptions{});

  const std::string randomize = reader.get_string("randomize", "auto");
  if (core::iequals(randomize, "auto")) {
    settings.randomize = true;
  } else if (core::iequals(randomize, "none")) {
    settings.randomize = false;
  } else {
    throw ConfigError("'randomize' parameter must be set to 'auto' or 'none'", reader.path() + ".randomize");
  }
  settings.randomization_seed = reader.get_uint("randomizationSeed", 0);
  options.trace_level = trace_level_of(reader);
  read_limits(reader, options);
  return settings;
}

}  // namespace cntkio
