// The CBF format in the registry: the composite deserializer type CNTKBinaryFormatDeserializer and the
// stand-alone reader type CNTKBinaryReader (spec cbf.md §1.3, pipeline.md §3.1).
#include "cntkio/cbf.hpp"
#include "cntkio/registry.hpp"
#include "core/data_files.hpp"
#include "spec/builtin_formats.hpp"
#include "spec/config_rules.hpp"

namespace cntkio::spec_detail {
namespace {

constexpr const char* kType = "CNTKBinaryFormatDeserializer";

}  // namespace

void register_cbf_format() {
  DeserializerType type;
  type.name = kType;
  type.modules = {"CNTKBinaryReader", "Cntk.Deserializers.Binary"};
  type.spec_from_config = [](const Config& section, const ConfigContext&) {
    CbfOptions options = cbf_options_from_config(section);
    options.keep_data_in_memory =
        false;  // only the stand-alone CNTKBinaryReader honours it (spec cbf.md §1.3)
    DeserializerSpec spec;
    spec.type = kType;
    spec.options = std::move(options);
    return spec;
  };
  type.create = [](const DeserializerSpec& spec, const DeserializerContext& context) {
    if (context.keys && !context.keys->is_numeric()) {
      throw ConfigError(
          "CNTKBinaryFormatDeserializer supports only numeric sequence keys (its keys are sequence indices); "
          "do not set useNumericSequenceKeys=false.",
          "type");
    }
    CbfOptions options = options_of<CbfOptions>(spec, "CbfOptions");
    options.element_type = context.element_type;
    if (context.trace_level) options.trace_level = *context.trace_level;
    std::vector<std::string> files =
        core::expand_data_files(options.file, options.more_files, options.file_list, "The CBF deserializer");
    std::vector<std::shared_ptr<Deserializer>> parts =
        core::open_data_files(files, [&](const std::string& file) {
          CbfOptions one = options;
          one.file = file;
          one.more_files.clear();
          one.file_list.clear();
          return make_cbf_deserializer(one);
        });
    return core::join_data_files(std::move(parts), std::move(files));
  };
  register_deserializer(std::move(type));

  ReaderType reader;
  reader.names = {"CNTKBinaryReader", "Cntk.Deserializers.Binary"};
  reader.spec_from_config = [](const Config& section) {
    ReaderSpec spec;
    spec.source.element_type = precision_of(section);
    spec.source.packing = Packing::kSequences;  // CNTKBinaryReader always packs sequences
    read_standalone_order(section, spec.source, kCbfDefaultWindowInChunks);
    read_execution_settings(section, spec.source);
    spec.source.keys = KeyMode::kNumeric;
    DeserializerSpec d;
    d.type = kType;
    d.options = cbf_options_from_config(section);
    spec.deserializers.push_back(std::move(d));
    return spec;
  };
  register_reader_type(std::move(reader));
}

}  // namespace cntkio::spec_detail
