// The cntkio_npy plugin: registers the NpySequenceDeserializer and the Multiply transform with the cntkio
// that loads it. A config reads it with `module = "cntkio_npy"` (docs/writing-a-deserializer.md):
//
//   deserializers = ([
//     type = "NpySequenceDeserializer" ; module = "cntkio_npy"
//     folder = "data"                  # or files = ("a.npy":"b.npy")
//     filesPerChunk = 4
//     input = [ features = [ dim = 3 ; transforms = ([ type = "Multiply" ; factor = 10 ]) ] ]
//   ])
#include <cntkio/plugin.hpp>
#include <string>
#include <vector>

#include "multiply_transform.hpp"
#include "npy_deserializer.hpp"
#include "npy_plugin.hpp"

namespace cntkio_npy {
namespace {

// An element of `files = (...)` as written, without the quotes around it.
std::string unquoted(const std::string& text) {
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front()) {
    return text.substr(1, text.size() - 2);
  }
  return text;
}

// Compiles a deserializer section into a spec: the options, and the transforms of its stream.
cntkio::DeserializerSpec spec_from_config(const cntkio::Config& section,
                                          const cntkio::ConfigContext& context) {
  NpyOptions options;
  if (section.exists_current("files")) {
    for (const std::string& file : section.get_array("files")) options.files.push_back(unquoted(file));
  } else {
    options.folder = section.get_string("folder");  // a ConfigError names the key when it is missing
  }
  options.files_per_chunk = section.get_uint("filesPerChunk", options.files_per_chunk);
  if (options.files_per_chunk == 0) throw section.error("filesPerChunk", "filesPerChunk must be at least 1.");

  const cntkio::Config input = section.get_block("input");
  const std::vector<std::string> names = input.keys();
  if (names.size() != 1) {
    throw section.error("input", "An NpySequenceDeserializer has one stream; 'input' names " +
                                     std::to_string(names.size()) + ".");
  }
  const cntkio::Config stream = input.get_block(names[0]);
  options.stream = names[0];
  options.dim = stream.get_uint("dim");
  if (options.dim == 0) throw stream.error("dim", "dim must be at least 1.");

  cntkio::DeserializerSpec spec;
  spec.type = kDeserializerType;
  spec.options = options;
  // The host compiles the transforms: their types may come from other modules.
  std::vector<cntkio::TransformSpec> transforms = context.stream_transforms(stream);
  if (!transforms.empty()) spec.transforms.push_back({options.stream, std::move(transforms)});
  return spec;
}

cntkio::DeserializerType deserializer_type() {
  cntkio::DeserializerType type;
  type.name = kDeserializerType;
  type.spec_from_config = spec_from_config;
  type.create = [](const cntkio::DeserializerSpec& spec, const cntkio::DeserializerContext& context) {
    return make_npy_deserializer(cntkio::options_of<NpyOptions>(spec, "cntkio_npy::NpyOptions"), context);
  };
  // Keys are file names: a reader's keys are strings unless its config says useNumericSequenceKeys.
  type.traits.string_keys_by_default = true;
  return type;
}

cntkio::TransformType multiply_type() {
  cntkio::TransformType type;
  type.name = kMultiplyType;
  type.spec_from_config = [](const cntkio::Config& section) {
    cntkio::TransformSpec spec;
    spec.type = kMultiplyType;
    spec.options = MultiplyOptions{section.get_double("factor", 1)};
    return spec;
  };
  type.create = [](const cntkio::TransformSpec& spec, const cntkio::StreamInfo& input,
                   const cntkio::TransformContext&) {
    return make_multiply_transformer(
        cntkio::options_of<MultiplyOptions>(spec, "cntkio_npy::MultiplyOptions").factor, input);
  };
  return type;
}

void register_types(cntkio::PluginRegistrar& registrar) {
  registrar.add_deserializer(deserializer_type());
  registrar.add_transform(multiply_type());
}

}  // namespace
}  // namespace cntkio_npy

CNTKIO_PLUGIN(cntkio_npy::register_types)
