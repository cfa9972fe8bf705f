// The flat HTK readers (`readerType = "HTKDeserializers"` or `"HTKMLFReader"`, spec htk.md §2.1 and
// Appendix A) compiled straight into a reader spec: one HTKFeatureDeserializer per feature record (the
// first in CNTK's key order is primary), then one HTKMLFDeserializer per label record, with the flat
// reader's own rules (frameMode defaults to true, `type = real`, `labelType = category`, readMethod and
// randomize, maxSequenceSize and definesMBSize in the stream record, CNTK's older truncated BPTT).
#include "formats/htk/htk_legacy_reader.hpp"

#include <cstdint>
#include <limits>
#include <vector>

#include "cntkio/errors.hpp"
#include "core/logger.hpp"
#include "core/text.hpp"
#include "formats/htk/htk_config.hpp"
#include "spec/config_rules.hpp"

namespace cntkio::htk {
namespace {

bool is_block_value(const Config& scope, const std::string& key) {
  std::optional<std::string> value = scope.find_string(key);
  if (!value) return false;
  size_t i = 0;
  while (i < value->size() && ((*value)[i] == ' ' || (*value)[i] == '\t')) ++i;
  return i < value->size() && ((*value)[i] == '[' || (*value)[i] == '{');
}

DeserializerSpec feature_spec(const Config& reader, const std::string& name, bool frame_mode) {
  const Config record = reader.get_block(name);
  const std::string type = record.get_string("type", "real");
  if (!core::iequals(type, "real")) throw record.error("type", "Feature type must be of type 'real'.");
  if (!record.exists("dim")) {
    throw record.error("scpFile", "Features must specify dimension: 'dim' property is missing.");
  }
  DeserializerSpec spec;
  spec.type = "HTKFeatureDeserializer";
  // The flat reader reads maxSequenceSize and definesMBSize in the stream record itself.
  spec.options = feature_options_from(name, record, record, record, frame_mode);
  return spec;
}

DeserializerSpec label_spec(const Config& reader, const std::string& name, bool frame_mode) {
  const Config record = reader.get_block(name);
  const bool has_label_type = record.exists("labelType");
  const std::string type =
      has_label_type ? record.get_string("labelType") : record.get_string("type", "category");
  if (!core::iequals(type, "category")) {
    throw record.error(has_label_type ? "labelType" : "type", "Label type must be of type 'category'.");
  }
  DeserializerSpec spec;
  spec.type = "HTKMLFDeserializer";
  spec.options = mlf_options_from(name, record, record, frame_mode);
  return spec;
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

ReaderSpec legacy_reader_spec(const Config& reader) {
  ReaderSpec spec;
  SourceOptions& s = spec.source;
  const bool frame_mode = reader.get_bool("frameMode", true);
  const bool truncated = reader.get_bool("truncated", false);
  if (frame_mode && truncated) {
    throw reader.error("truncated",
                       "'Truncated' cannot be 'true' in frameMode (i.e. when 'frameMode' is 'true')");
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
  s.packing = frame_mode ? Packing::kFrames : truncated ? Packing::kTruncatedSequences : Packing::kSequences;
  if (truncated) {
    s.truncation_length = reader.get_uint("truncationLength", 0);
    if (s.truncation_length == 0) s.truncation_slots_per_epoch = parallel_utterances(reader);
  }
  const std::string randomize = reader.get_string("randomize", "auto");
  s.randomize = block_randomize;
  if (block_randomize) {
    if (core::iequals(randomize, "none")) {
      throw reader.error("randomize", "'randomize' cannot be 'none' when readMethod is 'blockRandomize'.");
    }
    s.sample_based_window = true;
    if (!core::iequals(randomize, "auto")) {
      s.randomization_window = Config::to_uint(randomize, reader.path() + ".randomize");
    }
  }
  // Like CNTK's other stand-alone readers, minibatch sizes count the global timeline.
  s.local_timeline = false;
  s.element_type = spec_detail::precision_of(reader);
  s.max_errors = reader.get_uint("maxErrors", 0);
  const size_t right_splice = reader.get_uint("rightSplice", 0);
  if (truncated) s.right_splice = right_splice;  // read only for truncated packing, as truncationLength
  spec_detail::read_execution_settings(reader, s);
  const bool numeric = reader.get_bool("useNumericSequenceKeys", false);
  s.keys = numeric                                      ? KeyMode::kNumeric
           : reader.get_bool("hashSequenceKeys", false) ? KeyMode::kHashed
                                                        : KeyMode::kString;

  std::vector<DeserializerSpec> labels;
  for (const std::string& key : reader.keys()) {
    if (!is_block_value(reader, key)) continue;
    const Config record = reader.get_block(key);
    if (record.exists_current("scpFile")) {
      spec.deserializers.push_back(feature_spec(reader, key, frame_mode));
    } else if (record.exists_current("mlfFile") || record.exists_current("mlfFileList")) {
      labels.push_back(label_spec(reader, key, frame_mode));
    }
  }
  if (spec.deserializers.empty()) {
    throw reader.error("readerType",
                       "The HTK reader section has no feature record (a block with 'scpFile').");
  }
  for (DeserializerSpec& label : labels) spec.deserializers.push_back(std::move(label));
  spec_detail::resolve_reader_defaults(s, spec.deserializers, &reader);
  if (!s.truncation_slots_per_epoch.empty()) {
    // CNTK prints this at every epoch start; once per reader says the same.
    core::Logger(static_cast<int>(reader.get_uint("traceLevel", 1)))
        .log(core::LogLevel::kWarning,
             "Legacy configuration is used for truncated BPTT mode, please adapt the config to explicitly "
             "specify truncationLength.");
  }
  return spec;
}

}  // namespace cntkio::htk
