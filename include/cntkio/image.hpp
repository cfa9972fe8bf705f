/// @file
/// The image deserializers (CNTK's ImageDeserializer and Base64ImageDeserializer) and their transforms.
///
/// ImageDeserializer reads a map file (`path<TAB>label` or `key<TAB>path<TAB>label` per line); paths may
/// start with `...` (the map file's folder) or name an entry of a zip archive (`archive.zip@/entry`).
/// Base64ImageDeserializer reads `[key<TAB>]label<TAB>base64` lines with the images inline. Each produces
/// a dense image stream and a sparse one-hot label stream of `label_dim`. Images are decoded by OpenCV
/// exactly as CNTK did (BGR, uint8 HWC) and then go through the configured transforms (Crop, Scale, Color,
/// Intensity, Mean, Transpose) and a final cast to the element type; the transforms run between the
/// randomizer and the packer, with CNTK's per-minibatch-position random engines. See spec image.md and
/// docs/differences-from-cntk.md.
///
/// Thread-safety: a deserializer may load different chunks from several threads at once; its transformer
/// follows the SequenceTransformer contract (cntkio/transform.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/deserializer.hpp"
#include "cntkio/keys.hpp"

namespace cntkio {

/// Crop [type = "Crop"] (spec image.md §9.1).
struct ImageCropOptions {
  /// How the crop window is chosen [cropType].
  enum class Type : uint8_t {
    kCenter,      ///< the centred window
    kRandomSide,  ///< a uniformly random position (behaves exactly as kRandomArea)
    kRandomArea,  ///< a uniformly random position (behaves exactly as kRandomSide)
    kMultiView10  ///< view copy % 10 of a multi-view image: 4 corners and the centre, views 5-9 mirrored
  };
  Type type = Type::kCenter;     ///< [cropType] center
  int crop_width = 0;            ///< [cropSize] W of W[:H]; a fixed size is used only if both are > 0
  int crop_height = 0;           ///< [cropSize] H of W[:H] (W if one value)
  double side_ratio_min = 0;     ///< [sideRatio] min of min[:max]; 0:0 = unused
  double side_ratio_max = 0;     ///< [sideRatio] max
  double area_ratio_min = 0;     ///< [areaRatio] min of min[:max]; 0:0 = unused
  double area_ratio_max = 0;     ///< [areaRatio] max
  double aspect_ratio_min = 1;   ///< [aspectRatio] min of min[:max]
  double aspect_ratio_max = 1;   ///< [aspectRatio] max
  bool jitter_uniratio = false;  ///< [jitterType] none; uniratio draws ratios uniformly in [min, max]
  bool hflip = false;  ///< [hflip] true for randomside/randomarea, false otherwise (never multiview)
  uint64_t seed = 0;   ///< [seed] 0; engine j is seeded with seed + j
};

/// Scale [type = "Scale"] (spec image.md §9.2).
struct ImageScaleOptions {
  /// OpenCV interpolation used for resizing [interpolations].
  enum class Interpolation : uint8_t {
    kNearest,  ///< nearest neighbour
    kLinear,   ///< bilinear
    kCubic,    ///< bicubic
    kLanczos   ///< Lanczos over 8x8 pixels
  };
  /// How the aspect ratio is handled [scaleMode].
  enum class Mode : uint8_t {
    kFill,  ///< stretch to width x height
    kCrop,  ///< keep the aspect ratio, scale the shorter side to the target, cut out the centre
    kPad    ///< keep the aspect ratio, scale the longer side to the target, pad the rest (pad_value)
  };
  size_t width = 0;                                      ///< [width] required
  size_t height = 0;                                     ///< [height] required
  size_t channels = 0;                                   ///< [channels] required (declares the shape only)
  Interpolation interpolation = Interpolation::kLinear;  ///< [interpolations] linear
  Mode mode = Mode::kFill;                               ///< [scaleMode] fill
  double pad_value = -1;                                 ///< [padValue] -1 = replicate the border
};

/// Color [type = "Color"] (spec image.md §9.3): brightness, contrast and saturation jitter.
struct ImageColorOptions {
  double brightness_radius = 0;  ///< [brightnessRadius] 0, in [0, 1]
  double contrast_radius = 0;    ///< [contrastRadius] 0, in [0, 1]
  double saturation_radius = 0;  ///< [saturationRadius] 0, in [0, 1]
  uint64_t seed = 0;             ///< [seed] 0
};

/// Intensity [type = "Intensity"] (spec image.md §9.4): AlexNet's PCA lighting noise.
struct ImageIntensityOptions {
  double std_dev = 0;  ///< [intensityStdDev] 0 = off
  std::string file;    ///< [intensityFile] OpenCV FileStorage with EigVal (1x3) and EigVec (3x3); empty = off
  uint64_t seed = 0;   ///< [seed] 0
};

/// Mean [type = "Mean"] (spec image.md §9.5): subtracts an OpenCV XML `MeanImg`.
struct ImageMeanOptions {
  std::string file;  ///< [meanFile] empty = off
};

/// Transpose [type = "Transpose"]: interleaved HWC to planar CHW.
struct ImageTransposeOptions {};

/// One transform of an image stream's chain.
using ImageTransformOptions = std::variant<ImageCropOptions, ImageScaleOptions, ImageColorOptions,
                                           ImageIntensityOptions, ImageMeanOptions, ImageTransposeOptions>;

/// Options of ImageDeserializer / Base64ImageDeserializer (CNTK config keys in brackets).
struct ImageOptions {
  std::string file;                                ///< map file [file]
  bool base64 = false;                             ///< Base64ImageDeserializer map format
  std::string feature_stream = "features";         ///< name of the image stream (input with `transforms`)
  std::string label_stream = "labels";             ///< name of the label stream (input with `labelDim`)
  size_t label_dim = 0;                            ///< [labelDim] required, > 0
  bool grayscale = false;                          ///< decode to 1 channel [grayscale] false
  bool multi_view = false;                         ///< 10 copies of every image [multiViewCrop] false
  ElementType element_type = ElementType::kFloat;  ///< [precision] float
  uint64_t chunk_size_in_bytes = 32ull << 20;      ///< Base64 only: text per chunk
  /// Largest width x height an image may declare [maxImagePixels] 2^28 (268 435 456: 16384 x 16384).
  /// Checked from the image's header before anything is decoded; more is a FormatError.
  uint64_t max_image_pixels = uint64_t{1} << 28;
  /// Largest image in bytes [maxImageBytes] 2^30 (1 GiB): decoded (width x height x channels x bytes per
  /// sample of the file's encoding), and as an encoded file or (inflated) zip entry. More is a FormatError.
  uint64_t max_image_bytes = uint64_t{1} << 30;
  int trace_level = 1;  ///< 0 errors, 1 warnings, 2 info [traceLevel/verbosity]
  /// Sequence keys shared with the other deserializers of a reader; null = numeric ids.
  KeyTablePtr keys;
  /// Receives warnings (without newline); default: stderr.
  std::function<void(int level, std::string_view line)> log_sink;
};

/// Reads a composite deserializer section (`type = "ImageDeserializer"` or `"Base64ImageDeserializer"`). The
/// image stream's `transforms` are not part of the options: they are the reader's transform specs of the
/// stream (cntkio/reader_spec.hpp), each compiled by its registered type.
ImageOptions image_options_from_config(const Config& section, bool base64);

/// One element of an image stream's `transforms` (its `type`: Crop, Scale, Color, Intensity, Mean,
/// Transpose). Throws ConfigError.
ImageTransformOptions image_transform_options_from_config(const Config& record);

/// What the legacy `readerType = "ImageReader"` section holds beyond the deserializer options.
struct ImageReaderSettings {
  ImageOptions options;  ///< the map file and its streams
  /// The fixed transform chain of the image stream: Crop, Scale, Color, Intensity, Mean, and Transpose for
  /// nchw.
  std::vector<ImageTransformOptions> transforms;
  bool randomize = true;            ///< [randomize] auto (true) or none (false)
  uint64_t randomization_seed = 0;  ///< [randomizationSeed] 0
};

/// Reads a legacy `readerType = "ImageReader"` reader section (spec image.md §2.3).
ImageReaderSettings image_reader_settings_from_config(const Config& reader);

/// Creates the deserializer; reads the map file, checks labels, resolves zip entries (and, for Base64,
/// indexes the file). Also a TransformProvider for its image stream. Throws FormatError, IoError,
/// ConfigError.
std::shared_ptr<Deserializer> make_image_deserializer(const ImageOptions& options);

}  // namespace cntkio
