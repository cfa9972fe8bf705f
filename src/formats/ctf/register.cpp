// The CTF format in the registry: the composite deserializer type CNTKTextFormatDeserializer and the
// stand-alone reader type CNTKTextFormatReader (spec ctf.md §9, pipeline.md §3.1).
#include "cntkio/ctf.hpp"
#include "cntkio/registry.hpp"
#include "core/data_files.hpp"
#include "spec/builtin_formats.hpp"
#include "spec/config_rules.hpp"

namespace cntkio::spec_detail {
namespace {

constexpr const char* kType = "CNTKTextFormatDeserializer";

// CNTK's default window: chunks that hold 4 GiB of text in all.
size_t window_in_chunks(uint64_t chunk_size_in_bytes) {
  return 4294967296ull / chunk_size_in_bytes;
}

std::shared_ptr<Deserializer> create(const DeserializerSpec& spec, const DeserializerContext& context) {
  CtfOptions options = options_of<CtfOptions>(spec, "CtfOptions");
  options.keys = context.keys;
  options.element_type = context.element_type;
  if (context.trace_level) options.trace_level = *context.trace_level;
  std::vector<std::string> files =
      core::expand_data_files(options.file, options.more_files, options.file_list, "The CTF deserializer");
  std::vector<std::shared_ptr<Deserializer>> parts =
      core::open_data_files(files, [&](const std::string& file) {
        CtfOptions one = options;
        one.file = file;
        one.more_files.clear();
        one.file_list.clear();
        return make_ctf_deserializer(one);
      });
  return core::join_data_files(std::move(parts), std::move(files));
}

}  // namespace

void register_ctf_format() {
  DeserializerType type;
  type.name = kType;
  type.modules = {"CNTKTextFormatReader", "Cntk.Deserializers.TextFormat"};
  type.spec_from_config = [](const Config& section, const ConfigContext&) {
    CtfOptions options = ctf_options_from_config(section, true);
    options.keep_data_in_memory = false;  // only the stand-alone CTF reader honours it (spec ctf.md §9)
    DeserializerSpec spec;
    spec.type = kType;
    spec.options = std::move(options);
    return spec;
  };
  type.create = create;
  type.traits.default_window_in_chunks = [](const DeserializerSpec& spec, const Config* reader) {
    // CNTK computes it from the reader section's chunkSizeInBytes, not the deserializer's.
    if (reader != nullptr) return window_in_chunks(reader->get_uint("chunkSizeInBytes", 32ull << 20));
    return window_in_chunks(options_of<CtfOptions>(spec, "CtfOptions").chunk_size_in_bytes);
  };
  register_deserializer(std::move(type));

  ReaderType reader;
  reader.names = {"CNTKTextFormatReader", "Cntk.Deserializers.TextFormat"};
  reader.spec_from_config = [](const Config& section) {
    ReaderSpec spec;
    CtfOptions options = ctf_options_from_config(section, false);
    spec.source.element_type = precision_of(section);
    spec.source.packing = section.get_bool("frameMode", false) ? Packing::kFrames : Packing::kSequences;
    read_standalone_order(section, spec.source, window_in_chunks(options.chunk_size_in_bytes));
    read_execution_settings(section, spec.source);
    spec.source.keys = KeyMode::kNumeric;
    DeserializerSpec d;
    d.type = kType;
    d.options = std::move(options);
    spec.deserializers.push_back(std::move(d));
    return spec;
  };
  register_reader_type(std::move(reader));
}

}  // namespace cntkio::spec_detail
