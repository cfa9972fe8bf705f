// The HTK format in the registry: the deserializer types HTKFeatureDeserializer and HTKMLFDeserializer, and
// the flat stand-alone reader types HTKDeserializers / HTKMLFReader (spec htk.md).
#include "cntkio/htk.hpp"
#include "cntkio/registry.hpp"
#include "formats/htk/htk_legacy_reader.hpp"
#include "spec/builtin_formats.hpp"

namespace cntkio::spec_detail {

void register_htk_format() {
  DeserializerType features;
  features.name = "HTKFeatureDeserializer";
  features.modules = {"HTKDeserializers", "Cntk.Deserializers.HTK"};
  features.spec_from_config = [](const Config& section, const ConfigContext& context) {
    DeserializerSpec spec;
    spec.type = "HTKFeatureDeserializer";
    spec.options = htk_feature_options_from_config(section, context.frame_mode);
    return spec;
  };
  features.create = [](const DeserializerSpec& spec, const DeserializerContext& context) {
    HtkFeatureOptions options = options_of<HtkFeatureOptions>(spec, "HtkFeatureOptions");
    options.keys = context.keys;
    options.frame_mode = context.frame_mode;
    options.element_type = context.element_type;
    if (context.trace_level) options.trace_level = *context.trace_level;
    return make_htk_feature_deserializer(options);
  };
  features.traits.string_keys_by_default = true;
  register_deserializer(std::move(features));

  DeserializerType labels;
  labels.name = "HTKMLFDeserializer";
  labels.modules = {"HTKDeserializers", "Cntk.Deserializers.HTK"};
  labels.spec_from_config = [](const Config& section, const ConfigContext& context) {
    DeserializerSpec spec;
    spec.type = "HTKMLFDeserializer";
    spec.options = mlf_options_from_config(section, context.frame_mode);
    return spec;
  };
  labels.create = [](const DeserializerSpec& spec, const DeserializerContext& context) {
    MlfOptions options = options_of<MlfOptions>(spec, "MlfOptions");
    options.keys = context.keys;
    options.frame_mode = context.frame_mode;
    options.element_type = context.element_type;
    options.max_errors = context.max_errors;
    if (context.trace_level) options.trace_level = *context.trace_level;
    return make_mlf_deserializer(options);
  };
  labels.traits.string_keys_by_default = true;
  register_deserializer(std::move(labels));

  ReaderType reader;
  reader.names = {"HTKDeserializers", "Cntk.Deserializers.HTK", "HTKMLFReader"};
  reader.spec_from_config = htk::legacy_reader_spec;
  register_reader_type(std::move(reader));
}

}  // namespace cntkio::spec_detail
