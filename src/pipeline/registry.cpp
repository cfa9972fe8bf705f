#include "pipeline/registry.hpp"

#include <functional>
#include <map>

#include "cntkio/cbf.hpp"
#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/htk.hpp"
#include "cntkio/image.hpp"
#include "core/text.hpp"

namespace cntkio::pipeline {
namespace {

using Factory = std::function<std::shared_ptr<Deserializer>(const Config&, const DeserializerContext&)>;

struct Registration {
  const char* type;
  std::vector<const char*> reader_types;  // stand-alone readerType spellings (CNTK module names and aliases)
  Factory factory;
  bool string_keys_by_default = false;
};

const std::vector<Registration>& registrations() {
  static const std::vector<Registration> kRegistrations = {
      {"CNTKTextFormatDeserializer",
       {"CNTKTextFormatReader", "Cntk.Deserializers.TextFormat"},
       [](const Config& section, const DeserializerContext& context) {
         CtfOptions options = ctf_options_from_config(section, true);
         options.keep_data_in_memory = false;  // only the stand-alone CTF reader honours it (spec ctf.md §9)
         options.keys = context.keys;
         return make_ctf_deserializer(options);
       }},
      {"CNTKBinaryFormatDeserializer",
       {"CNTKBinaryReader", "Cntk.Deserializers.Binary"},
       [](const Config& section, const DeserializerContext& context) {
         CbfOptions options = cbf_options_from_config(section);
         options.keep_data_in_memory =
             false;  // only the stand-alone CNTKBinaryReader honours it (spec cbf.md §1.3)
         if (context.keys && !context.keys->is_numeric()) {
           throw ConfigError(
               "CNTKBinaryFormatDeserializer supports only numeric sequence keys (its keys are "
               "sequence indices); do not set useNumericSequenceKeys=false.",
               section.path() + ".type");
         }
         return make_cbf_deserializer(options);
       }},
      {"ImageDeserializer",
       {"ImageReader", "Cntk.Deserializers.Image"},
       [](const Config& section, const DeserializerContext& context) {
         ImageOptions options = image_options_from_config(section, false);
         options.keys = context.keys;
         return make_image_deserializer(options);
       }},
      {"Base64ImageDeserializer",
       {},
       [](const Config& section, const DeserializerContext& context) {
         ImageOptions options = image_options_from_config(section, true);
         options.keys = context.keys;
         return make_image_deserializer(options);
       }},
      {"HTKFeatureDeserializer",
       {},  // the flat readerType = HTKDeserializers form is converted to a composite reader (htk_legacy.cpp)
       [](const Config& section, const DeserializerContext& context) {
         HtkFeatureOptions options = htk_feature_options_from_config(section);
         options.keys = context.keys;
         return make_htk_feature_deserializer(options);
       },
       true},
      {"HTKMLFDeserializer",
       {},
       [](const Config& section, const DeserializerContext& context) {
         MlfOptions options = mlf_options_from_config(section);
         options.keys = context.keys;
         options.max_errors = context.max_errors;
         return make_mlf_deserializer(options);
       },
       true},
  };
  return kRegistrations;
}

}  // namespace

std::shared_ptr<Deserializer> create_deserializer(const std::string& type, const Config& section,
                                                  const DeserializerContext& context) {
  for (const Registration& r : registrations()) {
    if (type == r.type) return r.factory(section, context);
  }
  std::string known;
  for (const std::string& name : known_deserializer_types()) known += (known.empty() ? "" : ", ") + name;
  throw section.error("type", "Unknown deserializer type '" + type + "' (supported: " + known + ").");
}

std::string deserializer_type_for_reader(const std::string& reader_type) {
  for (const Registration& r : registrations()) {
    for (const char* name : r.reader_types) {
      if (core::iequals(reader_type, name)) return r.type;
    }
  }
  return {};
}

bool prefers_string_keys(const std::string& type) {
  for (const Registration& r : registrations()) {
    if (type == r.type) return r.string_keys_by_default;
  }
  return false;
}

std::vector<std::string> known_deserializer_types() {
  std::vector<std::string> out;
  for (const Registration& r : registrations()) out.emplace_back(r.type);
  return out;
}

}  // namespace cntkio::pipeline
