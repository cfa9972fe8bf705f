// ReaderSpec::from_config: CNTK's reader sections compiled into typed specs (spec pipeline.md §1.2, §3.1).
// A composite reader is compiled here, each deserializer section by its registered type; a stand-alone one
// (`readerType = ...`) by the reader type its format registered.
#include <filesystem>

#include "cntkio/errors.hpp"
#include "cntkio/registry.hpp"
#include "core/text.hpp"
#include "spec/builtin_formats.hpp"
#include "spec/config_rules.hpp"

namespace cntkio {
namespace spec_detail {

void check_precision(const Config& reader) {
  const std::string precision = reader.get_string("precision", "float");
  if (precision != "float" && precision != "double") {
    throw reader.error("precision",
                       "precision must be exactly 'float' or 'double', not '" + precision + "'.");
  }
}

ElementType precision_of(const Config& reader) {
  return reader.get_string("precision", "float") == "double" ? ElementType::kDouble : ElementType::kFloat;
}

void read_execution_settings(const Config& reader, SourceOptions& source) {
  source.prefetch = reader.get_bool("prefetch", true);
  if (reader.exists("loaderThreads")) source.threads = reader.get_uint("loaderThreads");
  if (reader.exists("traceLevel")) source.trace_level = static_cast<int>(reader.get_uint("traceLevel"));
  if (reader.exists("multiThreadedDeserialization")) {
    source.parallel_transforms = reader.get_bool("multiThreadedDeserialization", false);
  }
  if (reader.exists("chunkCacheBytes")) {
    const std::string text = reader.get_string("chunkCacheBytes");
    const std::optional<uint64_t> bytes = parse_byte_size(text);
    if (!bytes || *bytes > SIZE_MAX) {
      throw reader.error("chunkCacheBytes",
                         "chunkCacheBytes must be a byte count such as 4294967296, 4GiB or "
                         "512MB, not '" +
                             text + "'.");
    }
    source.chunk_cache_bytes = static_cast<size_t>(*bytes);
  }
}

void read_standalone_order(const Config& reader, SourceOptions& source, size_t default_window_in_chunks) {
  const std::string randomize = reader.get_string("randomize", "true");
  source.randomize = core::iequals(randomize, "none") ? false : reader.get_bool("randomize", true);
  source.sample_based_window = reader.get_bool("sampleBasedRandomizationWindow", false);
  const bool given = reader.exists("randomizationWindow");
  source.randomization_window = given ? reader.get_uint("randomizationWindow") : kWholeDataWindow;
  if (!*source.sample_based_window && !given) source.randomization_window = default_window_in_chunks;
  source.seed = reader.get_uint("randomizationSeed", 0);
  if (source.randomize && *source.randomization_window == 0) source.randomize = false;
  source.local_timeline = false;
  source.max_errors = 0;
}

void resolve_reader_defaults(SourceOptions& source, const std::vector<DeserializerSpec>& deserializers,
                             const Config* reader) {
  std::vector<std::shared_ptr<const DeserializerType>> types;
  for (const DeserializerSpec& d : deserializers) {
    auto type = find_deserializer_type(d.type);
    if (!type)
      throw UsageError("Unknown deserializer type '" + d.type + "'" +
                       spec_detail::left_out_format_note(d.type) + ".");
    types.push_back(std::move(type));
  }
  if (!source.keys) {
    bool strings = false;
    for (const auto& type : types) strings = strings || type->traits.string_keys_by_default;
    source.keys = strings ? KeyMode::kString : KeyMode::kNumeric;
  }
  const bool frames_alone = types.size() == 1 && types[0]->traits.frames_when_alone_and_randomized;
  if (!source.packing) {
    source.packing = frames_alone && source.randomize ? Packing::kFrames : Packing::kSequences;
  }
  if (!source.randomization_window) {
    size_t chunk_default = 0;
    const DeserializerSpec* by = nullptr;
    for (size_t i = 0; i < types.size() && by == nullptr; ++i) {
      if (types[i]->traits.default_window_in_chunks) {
        chunk_default = types[i]->traits.default_window_in_chunks(deserializers[i], reader);
        by = &deserializers[i];
      }
    }
    if (by != nullptr) {
      // Only a sample-based window asked for in the reader section itself needs an explicit size (CNTK:
      // ExistsCurrent); without randomization there is no window to size.
      const bool asked_here = reader == nullptr || reader->exists_current("sampleBasedRandomizationWindow");
      if (source.sample_based_window.value_or(false) && asked_here && source.randomize) {
        const std::string message =
            "A sample-based randomization window must be given explicitly "
            "(randomizationWindow) when a " +
            (by->type == "CNTKTextFormatDeserializer" ? std::string("CTF") : by->type) +
            " deserializer is used.";
        if (reader != nullptr) throw reader->error("randomizationWindow", message);
        throw ConfigError(message, "randomizationWindow");
      }
      source.sample_based_window = false;
      source.randomization_window = chunk_default;
    } else {
      source.randomization_window = frames_alone ? 1 : kWholeDataWindow;
    }
  }
  if (!source.sample_based_window) source.sample_based_window = true;
}

}  // namespace spec_detail

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  size_t digits = 0;
  uint64_t count = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    const uint64_t digit = static_cast<uint64_t>(text[digits] - '0');
    if (count > (UINT64_MAX - digit) / 10) return std::nullopt;
    count = count * 10 + digit;
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  struct Unit {
    std::string_view name;
    uint64_t factor;
  };
  static constexpr Unit kUnits[] = {{"", 1},
                                    {"b", 1},
                                    {"k", 1ull << 10},
                                    {"kib", 1ull << 10},
                                    {"kb", 1000},
                                    {"m", 1ull << 20},
                                    {"mib", 1ull << 20},
                                    {"mb", 1000000},
                                    {"g", 1ull << 30},
                                    {"gib", 1ull << 30},
                                    {"gb", 1000000000},
                                    {"t", 1ull << 40},
                                    {"tib", 1ull << 40},
                                    {"tb", 1000000000000}};
  const std::string_view unit = text.substr(digits);
  for (const Unit& u : kUnits) {
    if (!core::iequals(unit, u.name)) continue;
    if (count > UINT64_MAX / u.factor) return std::nullopt;
    return count * u.factor;
  }
  return std::nullopt;
}

namespace {

std::string supported(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::string directory_of(const std::string& file) {
  if (file.empty() || file.front() == '<') return {};  // text given in memory
  const std::filesystem::path parent = std::filesystem::path(file).parent_path();
  return parent.empty() ? "." : parent.string();
}

// Loads the module `section` names in `module`, if any (searching the folder of the config that names it
// first); a failure is reported at that key.
std::string load_module_of(const Config& section) {
  const std::string module = section.exists_current("module") ? section.get_string("module") : std::string();
  if (!module.empty()) {
    try {
      load_module(module, directory_of(section.location("module").file));
    } catch (const ConfigError& e) {
      throw section.error("module", e.cntk_text());
    }
  }
  return module;
}

// A stream's `transforms = ([type = ...]:[...])`, each element compiled by its registered transform type.
std::vector<TransformSpec> transforms_from_config(const Config& stream) {
  std::vector<TransformSpec> out;
  if (!stream.exists_current("transforms")) return out;
  for (const Config& section : stream.get_block_array("transforms")) {
    const std::string type = section.get_string("type");
    const std::string module = load_module_of(section);
    const std::shared_ptr<const TransformType> registered = find_transform_type(type);
    if (!registered) {
      const std::vector<std::string> known = registered_transform_types();
      throw section.error(
          "type", "Unknown transform type '" + type + "'" + spec_detail::left_out_format_note(type) +
                      " (registered: " + (known.empty() ? std::string("none") : supported(known)) + ").");
    }
    TransformSpec spec =
        registered->spec_from_config ? registered->spec_from_config(section) : TransformSpec{};
    spec.type = type;
    spec.module = module;
    out.push_back(std::move(spec));
  }
  return out;
}

// Composite reader (deserializers = ( [...]:[...] )): spec pipeline.md §1.2, §3.1, §6.
ReaderSpec composite_from_config(const Config& reader) {
  ReaderSpec spec;
  SourceOptions& s = spec.source;
  const bool frame_mode = reader.get_bool("frameMode", false);
  const bool truncated = reader.get_bool("truncated", false);
  s.truncation_length = reader.get_uint("truncationLength", 0);
  if (frame_mode && truncated) {
    throw reader.error("truncated", "frameMode and truncated BPTT are mutually exclusive.");
  }
  if (truncated && s.truncation_length == 0) {
    throw reader.error("truncationLength", "truncated=true needs truncationLength greater than 0.");
  }
  // Unset without either: an image deserializer alone, randomized, then packs frames (its trait).
  if (frame_mode) s.packing = Packing::kFrames;
  if (truncated) s.packing = Packing::kTruncatedSequences;
  // CNTK's writer action reads all data in file order, whole sequences (spec pipeline.md §1.2).
  const bool write_action = reader.get_string("action", "") == "write";
  if (write_action) s.packing = Packing::kSequences;
  s.right_splice = reader.get_uint("rightSplice", 0);
  if (s.packing != Packing::kTruncatedSequences) {  // CNTK reads both only for truncated packing
    s.truncation_length = 0;
    s.right_splice = 0;
  } else if (s.right_splice != 0 && s.right_splice == s.truncation_length) {
    throw reader.error("rightSplice",
                       "rightSplice (" + std::to_string(s.right_splice) +
                           ") must be less than the truncation length: the same samples would be "
                           "read again and again.");
  }
  s.element_type = spec_detail::precision_of(reader);
  s.randomize = reader.get_bool("randomize", true) && !write_action;
  s.seed = reader.get_uint("randomizationSeed", 0);
  s.max_errors = reader.get_uint("maxErrors", 0);
  s.local_timeline = reader.get_bool("localTimeline", true);
  spec_detail::read_execution_settings(reader, s);

  const std::vector<Config> sections = reader.get_block_array("deserializers");
  if (sections.empty()) throw reader.error("deserializers", "'deserializers' lists no deserializer.");
  const ConfigContext context{&reader, frame_mode, transforms_from_config};
  bool strings_by_default = false;
  bool chunk_window_format = false;
  for (const Config& section : sections) {
    const std::string type = section.get_string("type");
    const std::string module = load_module_of(section);
    const std::shared_ptr<const DeserializerType> registered = find_deserializer_type(type);
    if (!registered) {
      throw section.error("type", "Unknown deserializer type '" + type + "'" +
                                      spec_detail::left_out_format_note(type) +
                                      " (supported: " + supported(registered_deserializer_types()) + ").");
    }
    DeserializerSpec d = registered->spec_from_config(section, context);
    d.type = type;
    d.module = module;
    spec.deserializers.push_back(std::move(d));
    strings_by_default = strings_by_default || registered->traits.string_keys_by_default;
    chunk_window_format =
        chunk_window_format || static_cast<bool>(registered->traits.default_window_in_chunks);
  }
  const bool numeric = reader.get_bool("useNumericSequenceKeys", !strings_by_default);
  const bool hashed = reader.get_bool("hashSequenceKeys", false);
  s.keys = numeric ? KeyMode::kNumeric : hashed ? KeyMode::kHashed : KeyMode::kString;
  if (reader.exists("sampleBasedRandomizationWindow")) {
    s.sample_based_window = reader.get_bool("sampleBasedRandomizationWindow", true);
  }
  // CNTK applies a format's chunk window unless the window is written in the reader section itself.
  if (reader.exists_current("randomizationWindow") ||
      (!chunk_window_format && reader.exists("randomizationWindow"))) {
    // `default` is the composite reader's own default (randomizeAuto: the whole data), as CNTK's typed
    // accessor reads it.
    s.randomization_window = reader.get_uint("randomizationWindow", spec_detail::kWholeDataWindow);
  }
  spec_detail::resolve_reader_defaults(s, spec.deserializers, &reader);
  return spec;
}

}  // namespace

ReaderSpec ReaderSpec::from_config(const Config& reader) {
  spec_detail::check_precision(reader);
  if (reader.exists("readers")) {
    throw reader.error("readers", "Several independent readers ('readers') are not supported.");
  }
  // With `deserializers` in scope the default reader type is the composite reader; a readerType naming
  // another reader still picks that one, which ignores `deserializers` (CNTK loads the module readerType
  // names).
  const bool has_deserializers = reader.exists("deserializers");
  const std::string reader_type =
      reader.get_string("readerType", has_deserializers ? "Cntk.Composite" : "Cntk.Deserializers.TextFormat");
  if (core::iequals(reader_type, "Cntk.Composite") || core::iequals(reader_type, "CompositeDataReader")) {
    if (!has_deserializers) {
      throw reader.error("readerType", "readerType '" + reader_type +
                                           "' (the composite reader) needs a 'deserializers' array.");
    }
    return composite_from_config(reader);
  }
  const std::shared_ptr<const ReaderType> registered = find_reader_type(reader_type);
  if (!registered) {
    throw reader.error("readerType", "readerType '" + reader_type + "' is not supported" +
                                         spec_detail::left_out_format_note(reader_type) +
                                         " (supported: " + supported(registered_reader_types()) + ").");
  }
  return registered->spec_from_config(reader);
}

}  // namespace cntkio
