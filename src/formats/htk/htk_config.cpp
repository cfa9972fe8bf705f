// Options of the HTK feature and MLF deserializers from composite `deserializers` sections (spec htk.md
// §2.2).

#include "formats/htk/htk_config.hpp"

#include "cntkio/errors.hpp"
#include "cntkio/htk.hpp"
#include "core/input_file.hpp"
#include "core/text.hpp"

namespace cntkio {
namespace {

// The largest sample, in values, of an HTK feature stream (with its context window), as for CTF's dim.
constexpr uint64_t kMaxHtkDim = 0x7FFFFFFFull;

// Only the first stream of `input` in CNTK's (case-insensitive alphabetical) order is used.
std::pair<std::string, Config> first_input(const Config& section, const char* what) {
  if (!section.exists_current("input")) {
    throw ConfigError(std::string(what) + " section has no 'input' block describing its stream.",
                      section.path() + ".input");
  }
  Config input = section.get_block("input");
  std::vector<std::string> names = input.keys();
  if (names.empty()) {
    throw ConfigError(std::string(what) + " section's 'input' block names no stream.", input.path());
  }
  return {names.front(), input.get_block(names.front())};
}

ElementType element_type_of(const Config& section) {
  // CNTK: any precision other than case-insensitive "float" selects double.
  return core::iequals(section.get_string("precision", "float"), "float") ? ElementType::kFloat
                                                                          : ElementType::kDouble;
}

int trace_level_of(const Config& section) {
  return static_cast<int>(section.get_uint("traceLevel", 1));
}

// A configuration mistake whose text is CNTK's (compared by conformance cases as cntk_text()), located at
// the config text of `key`.
ConfigError config_text_error(const std::string& cntk_text, const Config& scope, std::string_view key) {
  return scope.error(key, cntk_text);
}

std::vector<std::string> read_list_file(const std::string& path) {
  const std::string text = core::read_input_file(path, "error opening file");
  std::vector<std::string> out;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out.push_back(std::move(line));
    begin = end + 1;
  }
  return out;
}

}  // namespace

HtkFeatureOptions htk_feature_options_from_config(const Config& section, std::optional<bool> frame_mode) {
  auto [name, stream] = first_input(section, "The HTKFeatureDeserializer");
  // CNTK reads maxSequenceSize and definesMBSize at the `input` level (and its parents), not in the stream.
  return htk::feature_options_from(name, stream, section.get_block("input"), section, frame_mode);
}

MlfOptions mlf_options_from_config(const Config& section, std::optional<bool> frame_mode) {
  auto [name, stream] = first_input(section, "The HTKMLFDeserializer");
  return htk::mlf_options_from(name, stream, section, frame_mode);
}

HtkFeatureOptions htk::feature_options_from(const std::string& name, const Config& stream,
                                            const Config& input, const Config& section,
                                            std::optional<bool> frame_mode) {
  HtkFeatureOptions o;
  o.name = name;
  o.frame_mode = frame_mode.value_or(section.get_bool("frameMode", true));
  o.element_type = element_type_of(section);
  o.trace_level = trace_level_of(section);
  o.scp_file = stream.get_string("scpFile");
  if (!stream.exists("dim")) {
    throw ConfigError("Features must specify dimension: 'dim' property is missing.", stream.path() + ".dim");
  }
  o.dim = stream.get_uint("dim");
  // Bounds CNTK does not check: a `-1` read as an unsigned count, or a window whose output dimension does
  // not fit in 32 bits, would make it read or allocate out of bounds (cntkio: a configuration error).
  if (o.dim == 0 || o.dim > kMaxHtkDim) {
    throw stream.error("dim", "'dim' must be between 1 and " + std::to_string(kMaxHtkDim) + ", found " +
                                  std::to_string(o.dim) + ".");
  }
  if (stream.find_string("contextWindow")) {  // missing or `default`: CNTK's default window 1 (none)
    std::vector<std::string> values = stream.get_array("contextWindow");
    const std::string key = stream.path() + ".contextWindow";
    if (values.size() == 1) {
      const int64_t w = Config::to_int(values[0], key);
      if (w < 0 || w % 2 == 0) {
        throw config_text_error(
            "Neighbor expansion of input features to " + std::to_string(w) + " is not symmetrical.", stream,
            "contextWindow");
      }
      o.left_context = o.right_context = static_cast<size_t>(w / 2);
    } else if (values.size() == 2) {
      const int64_t left = Config::to_int(values[0], key);
      const int64_t right = Config::to_int(values[1], key);
      if (left < 0 || right < 0) {
        throw stream.error("contextWindow", "contextWindow values must not be negative, found " +
                                                std::to_string(left) + ":" + std::to_string(right) + ".");
      }
      o.left_context = static_cast<size_t>(left);
      o.right_context = static_cast<size_t>(right);
    } else {
      throw config_text_error(
          "contextWindow must have 1 or 2 values specified, found " + std::to_string(values.size()) + ".",
          stream, "contextWindow");
    }
  }
  if (o.left_context + o.right_context >= kMaxHtkDim / o.dim) {
    throw stream.error("contextWindow", "The context window " + std::to_string(o.left_context) + ":" +
                                            std::to_string(o.right_context) + " with dim " +
                                            std::to_string(o.dim) + " makes samples of more than " +
                                            std::to_string(kMaxHtkDim) + " values.");
  }
  o.prefix_path_in_scp = stream.get_string("prefixPathInSCP", "");
  o.expand_to_utterance = stream.get_bool("expandToUtterance", false);
  o.max_sequence_size = input.get_uint("maxSequenceSize", o.max_sequence_size);
  o.defines_mb_size = input.get_bool("definesMBSize", false);
  return o;
}

MlfOptions htk::mlf_options_from(const std::string& name, const Config& stream, const Config& section,
                                 std::optional<bool> frame_mode) {
  MlfOptions o;
  o.name = name;
  o.frame_mode = frame_mode.value_or(section.get_bool("frameMode", true));
  o.element_type = element_type_of(section);
  o.trace_level = trace_level_of(section);
  o.chunk_size_in_bytes = section.get_uint("chunkSizeInBytes", o.chunk_size_in_bytes);
  if (stream.exists("labelDim")) {
    o.label_dim = stream.get_uint("labelDim");
  } else if (stream.exists("dim")) {
    o.label_dim = stream.get_uint("dim");
  } else {
    throw ConfigError("Labels must specify dimension: 'dim/labelDim' property is missing.",
                      stream.path() + ".labelDim");
  }
  o.label_mapping_file = stream.get_string("labelMappingFile", "");
  if (stream.exists_current("mlfFile")) {
    o.mlf_files.push_back(stream.get_string("mlfFile"));
  } else if (stream.exists_current("mlfFileList")) {
    const std::string list = stream.get_string("mlfFileList");
    // A value with ':' is a config array of paths (CNTK quirk: so is a Windows path "C:\...").
    const bool is_array = list.find(':') != std::string::npos;
    o.mlf_files = is_array ? stream.get_array("mlfFileList") : read_list_file(list);
    if (o.mlf_files.empty()) {
      // CNTK's text, then the list file that named none (CNTK names neither it nor the config key).
      throw stream.error("mlfFileList",
                         "HTKMLFDeserializer: No mlf files were specified" +
                             (is_array ? std::string() : " (the list file '" + list + "' names none)"));
    }
  } else {
    throw ConfigError("Either mlfFile or mlfFileList must exist in the reader configuration.",
                      stream.path() + ".mlfFile");
  }
  o.phone_boundaries = stream.get_bool("phoneBoundaries", false);
  if (o.frame_mode && o.phone_boundaries) {
    throw config_text_error("frameMode and phoneBoundaries are mutually exclusive options.", stream,
                            "phoneBoundaries");
  }
  return o;
}

}  // namespace cntkio
