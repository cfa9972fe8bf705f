// ReaderSpec and the typed options of the built-in formats as Python classes (see spec_bindings.hpp). Fields
// keep their C++ names and defaults (include/cntkio/reader_spec.hpp and the formats' headers). Reading a
// field that holds a list or an options object gives a copy: assign the whole value to change it.
#include "spec_bindings.hpp"

#include <pybind11/stl.h>

#include <any>
#include <string>

#include "cntkio/cbf.hpp"
#include "cntkio/ctf.hpp"
#include "cntkio/htk.hpp"
#include "cntkio/image.hpp"
#include "cntkio/reader_spec.hpp"

namespace py = pybind11;

namespace cntkio::python {
namespace {

// The options object held by `value` as the Python class of its C++ type (one of Types); None when empty.
template <class... Types>
py::object options_object(const std::any& value, const char* owner) {
  if (!value.has_value()) return py::none();
  py::object out;
  (void)((std::any_cast<Types>(&value) != nullptr ? (out = py::cast(*std::any_cast<Types>(&value)), true)
                                                  : false) ||
         ...);
  if (!out) {
    throw py::type_error(std::string("the options of this ") + owner +
                         " are of a C++ type that has no Python class (a plugin's own)");
  }
  return out;
}

// `object` (an instance of one of Types, or None) as the std::any a spec holds.
template <class... Types>
std::any options_value(const py::handle& object, const char* owner, const char* expected) {
  if (object.is_none()) return {};
  std::any out;
  (void)((py::isinstance<Types>(object) ? (out = object.cast<Types>(), true) : false) || ...);
  if (!out.has_value()) {
    throw py::type_error(std::string("the options of a ") + owner + " must be " + expected +
                         " or None, not " +
                         std::string(py::str(py::type::handle_of(object).attr("__name__"))));
  }
  return out;
}

// A class with a default constructor, a copy constructor and __copy__.
template <class T>
py::class_<T> value_class(py::handle scope, const char* name, const char* doc) {
  py::class_<T> cls(scope, name, doc);
  cls.def(py::init<>()).def(py::init<const T&>(), py::arg("other")).def("__copy__", [](const T& t) {
    return T(t);
  });
  return cls;
}

void bind_enums(py::module_& m) {
  py::enum_<ElementType>(m, "ElementType", "Element type of a stream's values [precision].")
      .value("float", ElementType::kFloat)
      .value("double", ElementType::kDouble);
  py::enum_<StorageFormat>(m, "StorageFormat", "Dense or sparse samples [format].")
      .value("dense", StorageFormat::kDense)
      .value("sparse", StorageFormat::kSparseCsc);
  py::enum_<Packing>(m, "Packing", "How the samples of a minibatch are packed.")
      .value("sequences", Packing::kSequences)
      .value("frames", Packing::kFrames)
      .value("truncated_sequences", Packing::kTruncatedSequences);
  py::enum_<KeyMode>(m, "KeyMode", "How sequence keys are matched between deserializers.")
      .value("numeric", KeyMode::kNumeric)
      .value("string", KeyMode::kString)
      .value("hashed", KeyMode::kHashed);
}

void bind_deserializer_options(py::module_& m) {
  value_class<CtfStreamOptions>(m, "CtfStreamOptions", "One stream of a CTF file (cntkio/ctf.hpp).")
      .def_readwrite("name", &CtfStreamOptions::name)
      .def_readwrite("alias", &CtfStreamOptions::alias)
      .def_readwrite("dim", &CtfStreamOptions::dim)
      .def_readwrite("storage", &CtfStreamOptions::storage)
      .def_readwrite("defines_mb_size", &CtfStreamOptions::defines_mb_size);
  value_class<CtfOptions>(m, "CtfOptions", "Options of a CNTKTextFormatDeserializer (cntkio/ctf.hpp).")
      .def_readwrite("file", &CtfOptions::file)
      .def_readwrite("more_files", &CtfOptions::more_files)
      .def_readwrite("file_list", &CtfOptions::file_list)
      .def_readwrite("streams", &CtfOptions::streams)
      .def_readwrite("element_type", &CtfOptions::element_type)
      .def_readwrite("skip_sequence_ids", &CtfOptions::skip_sequence_ids)
      .def_readwrite("max_errors", &CtfOptions::max_errors)
      .def_readwrite("trace_level", &CtfOptions::trace_level)
      .def_readwrite("chunk_size_in_bytes", &CtfOptions::chunk_size_in_bytes)
      .def_readwrite("keep_data_in_memory", &CtfOptions::keep_data_in_memory)
      .def_readwrite("cache_index", &CtfOptions::cache_index);
  value_class<CbfOptions>(m, "CbfOptions", "Options of a CNTKBinaryFormatDeserializer (cntkio/cbf.hpp).")
      .def_readwrite("file", &CbfOptions::file)
      .def_readwrite("more_files", &CbfOptions::more_files)
      .def_readwrite("file_list", &CbfOptions::file_list)
      .def_readwrite("renames", &CbfOptions::renames)
      .def_readwrite("element_type", &CbfOptions::element_type)
      .def_readwrite("keep_data_in_memory", &CbfOptions::keep_data_in_memory)
      .def_readwrite("trace_level", &CbfOptions::trace_level);
  value_class<HtkFeatureOptions>(m, "HtkFeatureOptions",
                                 "Options of an HTKFeatureDeserializer: one stream (cntkio/htk.hpp).")
      .def_readwrite("name", &HtkFeatureOptions::name)
      .def_readwrite("scp_file", &HtkFeatureOptions::scp_file)
      .def_readwrite("more_scp_files", &HtkFeatureOptions::more_scp_files)
      .def_readwrite("dim", &HtkFeatureOptions::dim)
      .def_readwrite("left_context", &HtkFeatureOptions::left_context)
      .def_readwrite("right_context", &HtkFeatureOptions::right_context)
      .def_readwrite("prefix_path_in_scp", &HtkFeatureOptions::prefix_path_in_scp)
      .def_readwrite("expand_to_utterance", &HtkFeatureOptions::expand_to_utterance)
      .def_readwrite("max_sequence_size", &HtkFeatureOptions::max_sequence_size)
      .def_readwrite("defines_mb_size", &HtkFeatureOptions::defines_mb_size)
      .def_readwrite("frame_mode", &HtkFeatureOptions::frame_mode)
      .def_readwrite("element_type", &HtkFeatureOptions::element_type)
      .def_readwrite("trace_level", &HtkFeatureOptions::trace_level);
  value_class<MlfOptions>(m, "MlfOptions", "Options of an HTKMLFDeserializer: one stream (cntkio/htk.hpp).")
      .def_readwrite("name", &MlfOptions::name)
      .def_readwrite("mlf_files", &MlfOptions::mlf_files)
      .def_readwrite("label_mapping_file", &MlfOptions::label_mapping_file)
      .def_readwrite("label_dim", &MlfOptions::label_dim)
      .def_readwrite("phone_boundaries", &MlfOptions::phone_boundaries)
      .def_readwrite("frame_mode", &MlfOptions::frame_mode)
      .def_readwrite("element_type", &MlfOptions::element_type)
      .def_readwrite("chunk_size_in_bytes", &MlfOptions::chunk_size_in_bytes)
      .def_readwrite("max_errors", &MlfOptions::max_errors)
      .def_readwrite("trace_level", &MlfOptions::trace_level);
  value_class<ImageOptions>(m, "ImageOptions",
                            "Options of an ImageDeserializer or Base64ImageDeserializer (cntkio/image.hpp).")
      .def_readwrite("file", &ImageOptions::file)
      .def_readwrite("base64", &ImageOptions::base64)
      .def_readwrite("feature_stream", &ImageOptions::feature_stream)
      .def_readwrite("label_stream", &ImageOptions::label_stream)
      .def_readwrite("label_dim", &ImageOptions::label_dim)
      .def_readwrite("grayscale", &ImageOptions::grayscale)
      .def_readwrite("multi_view", &ImageOptions::multi_view)
      .def_readwrite("element_type", &ImageOptions::element_type)
      .def_readwrite("chunk_size_in_bytes", &ImageOptions::chunk_size_in_bytes)
      .def_readwrite("max_image_pixels", &ImageOptions::max_image_pixels)
      .def_readwrite("max_image_bytes", &ImageOptions::max_image_bytes)
      .def_readwrite("trace_level", &ImageOptions::trace_level);
}

void bind_transform_options(py::module_& m) {
  auto crop = value_class<ImageCropOptions>(m, "ImageCropOptions", "A Crop transform (cntkio/image.hpp).");
  py::enum_<ImageCropOptions::Type>(crop, "Type", "How the crop window is chosen [cropType].")
      .value("center", ImageCropOptions::Type::kCenter)
      .value("randomside", ImageCropOptions::Type::kRandomSide)
      .value("randomarea", ImageCropOptions::Type::kRandomArea)
      .value("multiview10", ImageCropOptions::Type::kMultiView10);
  crop.def_readwrite("type", &ImageCropOptions::type)
      .def_readwrite("crop_width", &ImageCropOptions::crop_width)
      .def_readwrite("crop_height", &ImageCropOptions::crop_height)
      .def_readwrite("side_ratio_min", &ImageCropOptions::side_ratio_min)
      .def_readwrite("side_ratio_max", &ImageCropOptions::side_ratio_max)
      .def_readwrite("area_ratio_min", &ImageCropOptions::area_ratio_min)
      .def_readwrite("area_ratio_max", &ImageCropOptions::area_ratio_max)
      .def_readwrite("aspect_ratio_min", &ImageCropOptions::aspect_ratio_min)
      .def_readwrite("aspect_ratio_max", &ImageCropOptions::aspect_ratio_max)
      .def_readwrite("jitter_uniratio", &ImageCropOptions::jitter_uniratio)
      .def_readwrite("hflip", &ImageCropOptions::hflip)
      .def_readwrite("seed", &ImageCropOptions::seed);
  auto scale =
      value_class<ImageScaleOptions>(m, "ImageScaleOptions", "A Scale transform (cntkio/image.hpp).");
  py::enum_<ImageScaleOptions::Interpolation>(scale, "Interpolation", "[interpolations]")
      .value("nearest", ImageScaleOptions::Interpolation::kNearest)
      .value("linear", ImageScaleOptions::Interpolation::kLinear)
      .value("cubic", ImageScaleOptions::Interpolation::kCubic)
      .value("lanczos", ImageScaleOptions::Interpolation::kLanczos);
  py::enum_<ImageScaleOptions::Mode>(scale, "Mode", "[scaleMode]")
      .value("fill", ImageScaleOptions::Mode::kFill)
      .value("crop", ImageScaleOptions::Mode::kCrop)
      .value("pad", ImageScaleOptions::Mode::kPad);
  scale.def_readwrite("width", &ImageScaleOptions::width)
      .def_readwrite("height", &ImageScaleOptions::height)
      .def_readwrite("channels", &ImageScaleOptions::channels)
      .def_readwrite("interpolation", &ImageScaleOptions::interpolation)
      .def_readwrite("mode", &ImageScaleOptions::mode)
      .def_readwrite("pad_value", &ImageScaleOptions::pad_value);
  value_class<ImageColorOptions>(m, "ImageColorOptions", "A Color transform (cntkio/image.hpp).")
      .def_readwrite("brightness_radius", &ImageColorOptions::brightness_radius)
      .def_readwrite("contrast_radius", &ImageColorOptions::contrast_radius)
      .def_readwrite("saturation_radius", &ImageColorOptions::saturation_radius)
      .def_readwrite("seed", &ImageColorOptions::seed);
  value_class<ImageIntensityOptions>(m, "ImageIntensityOptions", "An Intensity transform (cntkio/image.hpp).")
      .def_readwrite("std_dev", &ImageIntensityOptions::std_dev)
      .def_readwrite("file", &ImageIntensityOptions::file)
      .def_readwrite("seed", &ImageIntensityOptions::seed);
  value_class<ImageMeanOptions>(m, "ImageMeanOptions", "A Mean transform (cntkio/image.hpp).")
      .def_readwrite("file", &ImageMeanOptions::file);
  value_class<ImageTransposeOptions>(m, "ImageTransposeOptions", "A Transpose transform (no options).");
}

void bind_specs(py::module_& m) {
  value_class<TransformSpec>(m, "TransformSpec", "One transform of a stream: a registered type and options.")
      .def_readwrite("type", &TransformSpec::type)
      .def_readwrite("module", &TransformSpec::module)
      .def_property(
          "options",
          [](const TransformSpec& spec) {
            return options_object<ImageCropOptions, ImageScaleOptions, ImageColorOptions,
                                  ImageIntensityOptions, ImageMeanOptions, ImageTransposeOptions>(
                spec.options, "transform");
          },
          [](TransformSpec& spec, const py::object& options) {
            spec.options = options_value<ImageCropOptions, ImageScaleOptions, ImageColorOptions,
                                         ImageIntensityOptions, ImageMeanOptions, ImageTransposeOptions>(
                options, "transform", "an Image*Options object");
          },
          "The type's options (ImageCropOptions for 'Crop', ...); None: the type's defaults.");
  value_class<StreamTransforms>(m, "StreamTransforms", "The transforms of one stream, applied in order.")
      .def_readwrite("stream", &StreamTransforms::stream)
      .def_readwrite("transforms", &StreamTransforms::transforms);
  value_class<DeserializerSpec>(m, "DeserializerSpec", "One deserializer of a reader.")
      .def_readwrite("type", &DeserializerSpec::type)
      .def_readwrite("module", &DeserializerSpec::module)
      .def_property(
          "options",
          [](const DeserializerSpec& spec) {
            return options_object<CtfOptions, CbfOptions, HtkFeatureOptions, MlfOptions, ImageOptions>(
                spec.options, "deserializer");
          },
          [](DeserializerSpec& spec, const py::object& options) {
            spec.options = options_value<CtfOptions, CbfOptions, HtkFeatureOptions, MlfOptions, ImageOptions>(
                options, "deserializer",
                "CtfOptions, CbfOptions, HtkFeatureOptions, MlfOptions or ImageOptions");
          },
          "The type's options (CtfOptions for 'CNTKTextFormatDeserializer', ...); None: the type's defaults.")
      .def_readwrite("transforms", &DeserializerSpec::transforms);
  value_class<SourceOptions>(m, "SourceOptions", "What a reader does with its deserializers' data.")
      .def_readwrite("randomize", &SourceOptions::randomize)
      .def_readwrite("randomization_window", &SourceOptions::randomization_window)
      .def_readwrite("sample_based_window", &SourceOptions::sample_based_window)
      .def_readwrite("seed", &SourceOptions::seed)
      .def_readwrite("packing", &SourceOptions::packing)
      .def_readwrite("truncation_length", &SourceOptions::truncation_length)
      .def_readwrite("right_splice", &SourceOptions::right_splice)
      .def_readwrite("truncation_slots_per_epoch", &SourceOptions::truncation_slots_per_epoch)
      .def_readwrite("local_timeline", &SourceOptions::local_timeline)
      .def_readwrite("element_type", &SourceOptions::element_type)
      .def_readwrite("keys", &SourceOptions::keys)
      .def_readwrite("max_errors", &SourceOptions::max_errors)
      .def_readwrite("max_samples", &SourceOptions::max_samples)
      .def_readwrite("max_sweeps", &SourceOptions::max_sweeps)
      .def_readwrite("trace_level", &SourceOptions::trace_level)
      .def_readwrite("threads", &SourceOptions::threads)
      .def_readwrite("prefetch", &SourceOptions::prefetch)
      .def_readwrite("parallel_transforms", &SourceOptions::parallel_transforms)
      .def_readwrite("chunk_cache_bytes", &SourceOptions::chunk_cache_bytes);
  value_class<ReaderSpec>(m, "ReaderSpec", "A reader: its source options and deserializers (first: primary).")
      .def_readwrite("source", &ReaderSpec::source)
      .def_readwrite("deserializers", &ReaderSpec::deserializers);
}

}  // namespace

void bind_reader_spec(py::module_& m) {
  bind_enums(m);
  bind_deserializer_options(m);
  bind_transform_options(m);
  bind_specs(m);
  m.def("parse_byte_size", &parse_byte_size, py::arg("text"),
        "The bytes a size such as '4GiB' or '512MB' stands for; None when it is not one.");
}

}  // namespace cntkio::python
