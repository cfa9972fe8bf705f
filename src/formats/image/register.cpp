// The image format in the registry: the deserializer types ImageDeserializer and Base64ImageDeserializer,
// and the legacy stand-alone reader type ImageReader (spec image.md §2).
#include "cntkio/image.hpp"
#include "cntkio/registry.hpp"
#include "formats/image/image_transforms.hpp"
#include "spec/builtin_formats.hpp"
#include "spec/config_rules.hpp"

namespace cntkio::spec_detail {
namespace {

// The registered name of the transform `options` describes.
const char* transform_name(const ImageTransformOptions& options) {
  static constexpr const char* kNames[] = {"Crop", "Scale", "Color", "Intensity", "Mean", "Transpose"};
  return kNames[options.index()];
}

DeserializerType image_type(const char* name, bool base64) {
  DeserializerType type;
  type.name = name;
  type.modules = {"ImageReader", "Cntk.Deserializers.Image"};
  type.spec_from_config = [name, base64](const Config& section, const ConfigContext& context) {
    DeserializerSpec spec;
    spec.type = name;
    ImageOptions options = image_options_from_config(section, base64);
    const Config stream = section.get_block("input").get_block(options.feature_stream);
    spec.transforms.push_back(StreamTransforms{options.feature_stream, context.stream_transforms(stream)});
    spec.options = std::move(options);
    return spec;
  };
  // CNTK ends every image stream's chain with a Cast to the reader's element type; alone, it decodes.
  type.complete = [](DeserializerSpec& spec, const DeserializerContext&) {
    const std::string stream = options_of<ImageOptions>(spec, "ImageOptions").feature_stream;
    StreamTransforms* chain = nullptr;
    for (StreamTransforms& t : spec.transforms) {
      if (t.stream == stream) chain = &t;
    }
    if (chain == nullptr) chain = &spec.transforms.emplace_back(StreamTransforms{stream, {}});
    if (chain->transforms.empty() || chain->transforms.back().type != "Cast") {
      chain->transforms.push_back(TransformSpec{"Cast", "", {}});
    }
  };
  type.create = [base64](const DeserializerSpec& spec, const DeserializerContext& context) {
    ImageOptions options = options_of<ImageOptions>(spec, "ImageOptions");
    options.base64 = base64;
    options.keys = context.keys;
    options.element_type = context.element_type;
    if (context.trace_level) options.trace_level = *context.trace_level;
    return make_image_deserializer(options);
  };
  // A sole ImageDeserializer, randomized, packs frames with a window of 1 (spec pipeline.md §1.2,
  // image.md §2.1); the base64 one does not.
  type.traits.frames_when_alone_and_randomized = !base64;
  return type;
}

}  // namespace

void register_image_format() {
  image::register_image_transforms();
  register_deserializer(image_type("ImageDeserializer", false));
  register_deserializer(image_type("Base64ImageDeserializer", true));

  // The legacy reader: string keys, a block randomizer with a window of one sample (or none) and frames.
  ReaderType reader;
  reader.names = {"ImageReader"};
  reader.spec_from_config = [](const Config& section) {
    ImageReaderSettings settings = image_reader_settings_from_config(section);
    ReaderSpec spec;
    SourceOptions& s = spec.source;
    read_execution_settings(section, s);
    s.trace_level = settings.options.trace_level;
    s.element_type = settings.options.element_type;
    s.keys = KeyMode::kString;
    s.packing = Packing::kFrames;
    s.local_timeline = false;
    s.randomize = settings.randomize;
    s.randomization_window = 1;
    s.sample_based_window = true;
    s.seed = settings.randomization_seed;
    s.parallel_transforms = true;
    DeserializerSpec d;
    d.type = "ImageDeserializer";
    StreamTransforms chain{settings.options.feature_stream, {}};
    for (const ImageTransformOptions& t : settings.transforms) {
      chain.transforms.push_back(
          TransformSpec{transform_name(t), "", std::visit([](const auto& o) { return std::any(o); }, t)});
    }
    d.transforms.push_back(std::move(chain));
    d.options = std::move(settings.options);
    spec.deserializers.push_back(std::move(d));
    return spec;
  };
  register_reader_type(std::move(reader));
}

}  // namespace cntkio::spec_detail

// The entry points of the image component, cntkio_image.so (src/spec/components.cpp loads it on first use).
extern "C" __attribute__((visibility("default"))) const char* cntkio_component_version_image() {
  return CNTKIO_VERSION;
}
extern "C" __attribute__((visibility("default"))) void cntkio_component_register_image() {
  cntkio::spec_detail::register_image_format();
}
