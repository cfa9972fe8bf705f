#include "pipeline/htk_legacy.hpp"

#include <cstdint>
#include <limits>
#include <vector>

#include "cntkio/errors.hpp"
#include "core/logger.hpp"
#include "core/text.hpp"

namespace cntkio::pipeline {
namespace {

// The generated text quotes string values; the config language has no escape for '"'.
std::string quoted(const Config& scope, std::string_view key, const std::string& value) {
  if (value.find('"') != std::string::npos) {
    throw scope.error(key,
                      "a value containing '\"' cannot be used with readerType HTKDeserializers/HTKMLFReader; "
                      "write the reader as a composite 'deserializers' section instead.");
  }
  return "\"" + value + "\"";
}

bool is_block_value(const Config& scope, const std::string& key) {
  std::optional<std::string> value = scope.find_string(key);
  if (!value) return false;
  size_t i = 0;
  while (i < value->size() && ((*value)[i] == ' ' || (*value)[i] == '\t')) ++i;
  return i < value->size() && ((*value)[i] == '[' || (*value)[i] == '{');
}

// A configuration mistake with CNTK's text (cntk_text() stays that text), located at `key`.
ConfigError text_error(const std::string& cntk_text, const Config& scope, std::string_view key) {
  return scope.error(key, cntk_text);
}

// `key = value` for every key found in `record` (scoped lookup), copied as resolved text.
void copy_scoped(const Config& record, std::initializer_list<const char*> keys, std::string& out) {
  for (const char* key : keys) {
    if (!record.exists(key)) continue;
    std::optional<std::string> value = record.find_string(key);
    if (!value) continue;
    out += std::string(key) + " = " + quoted(record, key, *value) + "\n";
  }
}

std::string feature_deserializer(const Config& reader, const std::string& name) {
  Config record = reader.get_block(name);
  const std::string type = record.get_string("type", "real");
  if (!core::iequals(type, "real")) throw text_error("Feature type must be of type 'real'.", record, "type");
  if (!record.exists("dim")) {
    throw text_error("Features must specify dimension: 'dim' property is missing.", record, "scpFile");
  }
  std::string stream = "dim = " + std::to_string(record.get_uint("dim")) + "\n";
  stream += "scpFile = " + quoted(record, "scpFile", record.get_string("scpFile")) + "\n";
  if (record.exists("contextWindow")) {
    std::string joined;
    for (const std::string& v : record.get_array("contextWindow")) {
      joined +=
          (joined.empty() ? "" : ":") + std::to_string(Config::to_int(v, record.path() + ".contextWindow"));
    }
    stream += "contextWindow = " + joined + "\n";
  }
  copy_scoped(record, {"prefixPathInSCP", "expandToUtterance"}, stream);
  // The flat reader reads these two in the stream record; the composite one at the `input` level.
  std::string input = "\n";
  copy_scoped(record, {"maxSequenceSize", "definesMBSize"}, input);
  return "[\ntype = \"HTKFeatureDeserializer\"\ninput = [\n" + name + " = [\n" + stream + "]\n" + input +
         "]\n]";
}

std::string label_deserializer(const Config& reader, const std::string& name) {
  Config record = reader.get_block(name);
  const std::string type =
      record.exists("labelType") ? record.get_string("labelType") : record.get_string("type", "category");
  if (!core::iequals(type, "category")) {
    throw text_error("Label type must be of type 'category'.", record,
                     record.exists("labelType") ? "labelType" : "type");
  }
  std::string stream;
  copy_scoped(record, {"labelDim", "dim", "labelMappingFile", "phoneBoundaries"}, stream);
  if (record.exists_current("mlfFile")) {
    stream += "mlfFile = " + quoted(record, "mlfFile", record.get_string("mlfFile")) + "\n";
  } else if (record.exists_current("mlfFileList")) {
    const std::string list = record.get_string("mlfFileList");
    if (list.find(':') == std::string::npos) {
      stream += "mlfFileList = " + quoted(record, "mlfFileList", list) + "\n";
    } else {
      std::string joined;
      for (const std::string& path : record.get_array("mlfFileList")) {
        joined += (joined.empty() ? "(" : ":") + quoted(record, "mlfFileList", path);
      }
      stream += "mlfFileList = " + joined + ")\n";
    }
  }
  std::string section = "[\ntype = \"HTKMLFDeserializer\"\n";
  copy_scoped(record, {"chunkSizeInBytes"}, section);
  return section + "input = [\n" + name + " = [\n" + stream + "]\n]\n]";
}

// nbruttsineachrecurrentiter (scoped, default 1): one count of parallel utterances per epoch, the last
// repeating. CNTK keeps the values as ints.
std::vector<size_t> parallel_utterances(const Config& reader) {
  const char* const key = "nbruttsineachrecurrentiter";
  if (!reader.exists(key)) return {1};
  std::vector<size_t> counts;
  for (const std::string& text : reader.get_array(key)) {
    const int64_t count = Config::to_int(text, reader.path() + "." + key);
    if (count < 1 || count > std::numeric_limits<int32_t>::max()) {
      throw reader.error(key, std::string(key) + " lists '" + text +
                                  "'; each number of parallel utterances must be from 1 to 2147483647.");
    }
    counts.push_back(static_cast<size_t>(count));
  }
  if (counts.empty()) throw reader.error(key, std::string(key) + " lists no number.");
  return counts;
}

}  // namespace

bool is_htk_legacy_reader(const std::string& reader_type) {
  return core::iequals(reader_type, "HTKDeserializers") ||
         core::iequals(reader_type, "Cntk.Deserializers.HTK") || core::iequals(reader_type, "HTKMLFReader");
}

HtkLegacyReader htk_legacy_to_composite(const Config& reader) {
  HtkLegacyReader out;
  const bool frame_mode = reader.get_bool("frameMode", true);
  const bool truncated = reader.get_bool("truncated", false);
  if (frame_mode && truncated) {
    throw text_error("'Truncated' cannot be 'true' in frameMode (i.e. when 'frameMode' is 'true')", reader,
                     "truncated");
  }
  const std::string read_method = reader.get_string("readMethod", "blockRandomize");
  const bool block_randomize = core::iequals(read_method, "blockRandomize");
  if (!block_randomize && !core::iequals(read_method, "none")) {
    throw reader.error("readMethod",
                       "readMethod must be 'blockRandomize' or 'none', not '" + read_method + "'.");
  }
  if (core::iequals(reader.get_string("action", ""), "write") && block_randomize) {
    throw reader.error("readMethod", "action=write requires readMethod=none.");
  }
  const std::string randomize = reader.get_string("randomize", "auto");
  std::string settings = "frameMode = " + std::string(frame_mode ? "true" : "false") + "\n";
  settings += "truncated = " + std::string(truncated ? "true" : "false") + "\n";
  if (truncated) {
    const uint64_t truncation_length = reader.get_uint("truncationLength", 0);
    settings += "truncationLength = " + std::to_string(truncation_length) + "\n";
    if (truncation_length == 0) out.bptt_slots_per_epoch = parallel_utterances(reader);
  }
  if (block_randomize) {
    if (core::iequals(randomize, "none")) {
      throw reader.error("randomize", "'randomize' cannot be 'none' when readMethod is 'blockRandomize'.");
    }
    settings += "randomize = true\nsampleBasedRandomizationWindow = true\n";
    if (!core::iequals(randomize, "auto")) {
      settings += "randomizationWindow = " +
                  std::to_string(Config::to_uint(randomize, reader.path() + ".randomize")) + "\n";
    }
  } else {
    settings += "randomize = false\n";
  }
  // Like CNTK's other stand-alone readers, minibatch sizes count the global timeline.
  settings += "localTimeline = false\n";
  copy_scoped(
      reader,
      {"precision", "useNumericSequenceKeys", "hashSequenceKeys", "traceLevel", "maxErrors", "rightSplice"},
      settings);

  std::vector<std::string> features, labels;
  for (const std::string& key : reader.keys()) {
    if (!is_block_value(reader, key)) continue;
    Config record = reader.get_block(key);
    if (record.exists_current("scpFile")) {
      features.push_back(feature_deserializer(reader, key));
    } else if (record.exists_current("mlfFile") || record.exists_current("mlfFileList")) {
      labels.push_back(label_deserializer(reader, key));
    }
  }
  if (features.empty()) {
    throw reader.error("readerType",
                       "The HTK reader section has no feature record (a block with 'scpFile').");
  }
  std::string list;
  for (const std::vector<std::string>* group : {&features, &labels}) {
    for (const std::string& d : *group) list += (list.empty() ? "" : ":\n") + d;
  }
  const std::string text = "reader = [\n" + settings + "deserializers = (\n" + list + "\n)\n]\n";
  out.composite =
      Config::from_text(text, "<" + reader.path() + " as a composite reader>").get_block("reader");
  if (!out.bptt_slots_per_epoch.empty()) {
    // CNTK prints this at every epoch start; once per reader says the same.
    core::Logger(static_cast<int>(reader.get_uint("traceLevel", 1)))
        .log(core::LogLevel::kWarning,
             "Legacy configuration is used for truncated BPTT mode, please adapt the config to explicitly "
             "specify truncationLength.");
  }
  return out;
}

}  // namespace cntkio::pipeline
