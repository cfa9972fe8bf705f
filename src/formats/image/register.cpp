// The image format in the registry: the deserializer types ImageDeserializer and Base64ImageDeserializer,
// and the legacy stand-alone reader type ImageReader (spec image.md §2).
#include <filesystem>

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

// The image stream's `transforms` records, each compiled by the transform type it names (a plugin's too).
std::vector<TransformSpec> stream_transforms(const Config& section, const std::string& stream) {
  std::vector<TransformSpec> out;
  const Config input = section.get_block("input").get_block(stream);
  for (const Config& record : input.get_block_array("transforms")) {
    const std::string type = record.get_string("type");
    const std::string module = record.exists_current("module") ? record.get_string("module") : std::string();
    if (!module.empty()) {
      const std::filesystem::path file = record.location("module").file;
      try {
        load_module(module, file.has_parent_path() ? file.parent_path().string() : ".");
      } catch (const ConfigError& e) {
        throw record.error("module", e.cntk_text());
      }
    }
    const std::shared_ptr<const TransformType> registered = find_transform_type(type);
    if (!registered) {
      std::string known;
      for (const std::string& name : registered_transform_types())
        known += (known.empty() ? "" : ", ") + name;
      throw record.error("type", "Unknown transform type '" + type + "' (supported: " + known + ").");
    }
    TransformSpec spec =
        registered->spec_from_config ? registered->spec_from_config(record) : TransformSpec{};
    spec.type = type;
    spec.module = module;
    out.push_back(std::move(spec));
  }
  return out;
}

DeserializerType image_type(const char* name, bool base64) {
  DeserializerType type;
  type.name = name;
  type.modules = {"ImageReader", "Cntk.Deserializers.Image"};
  type.spec_from_config = [name, base64](const Config& section, const ConfigContext&) {
    DeserializerSpec spec;
    spec.type = name;
    ImageOptions options = image_options_from_config(section, base64);
    spec.transforms.push_back(
        StreamTransforms{options.feature_stream, stream_transforms(section, options.feature_stream)});
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
