// The CTF deserializer's options from a CNTK reader or deserializer section (spec ctf.md §2).
#include <string>
#include <unordered_map>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "config/data_files.hpp"
#include "core/text.hpp"

namespace cntkio {
namespace {

// Sparse indices are int32 (CNTK's limit); dense streams get the same limit (see ctf_deserializer.cpp).
constexpr uint64_t kMaxDim = 0x7FFFFFFFull;

}  // namespace

CtfOptions ctf_options_from_config(const Config& section, bool composite) {
  CtfOptions options;
  config_detail::data_files_from_config(section, options.file, options.more_files, options.file_list);
  if (!section.exists_current("input")) {
    throw section.error("input", "The CTF reader section has no 'input' block describing its streams.");
  }
  Config input = section.get_block("input");
  constexpr size_t kNone = SIZE_MAX;
  std::unordered_map<std::string, size_t> first_with_alias;  // alias -> index of its first stream
  size_t defining_index = kNone;                             // the first stream with definesMBSize=true
  for (const std::string& name : input.keys()) {
    Config stream = input.get_block(name);
    CtfStreamOptions s;
    s.name = name;
    if (!stream.exists_current("dim")) {
      throw stream.error("dim", "Stream '" + name + "' has no 'dim'.");
    }
    s.dim = stream.get_uint("dim");
    if (s.dim == 0)
      throw stream.error("dim", "Stream '" + name + "' needs a dimension 'dim' greater than 0.");
    if (s.dim > kMaxDim) {
      throw stream.error("dim", "Stream '" + name + "' has dim " + std::to_string(s.dim) +
                                    ", above the maximum 2147483647.");
    }
    if (!stream.exists_current("format")) {
      throw stream.error("format", "Stream '" + name + "' has no 'format' (dense or sparse).");
    }
    std::string format = core::to_lower(stream.get_string("format"));
    if (format == "dense") {
      s.storage = StorageFormat::kDense;
    } else if (format == "sparse") {
      s.storage = StorageFormat::kSparseCsc;
    } else {
      throw stream.error("format",
                         "Stream '" + name + "' has format '" + format + "'; expected 'dense' or 'sparse'.");
    }
    if (stream.exists_current("alias")) {
      s.alias = stream.get_string("alias");
      if (s.alias.empty()) throw stream.error("alias", "Stream '" + name + "' has an empty alias.");
    } else {
      s.alias = name;
    }
    s.defines_mb_size = stream.get_bool("definesMBSize", false);
    // The deserializer checks these too; here the error can point at the config text. Of two conflicts,
    // the one with the earlier stream is reported. A map, not a scan: configs may hold many thousand streams.
    const size_t index = options.streams.size();
    const auto [same_alias, alias_is_new] = first_with_alias.emplace(s.alias, index);
    const bool second_defining = s.defines_mb_size && defining_index != kNone;
    if (second_defining && (alias_is_new || defining_index < same_alias->second)) {
      throw stream.error("definesMBSize",
                         "Only one stream may set definesMBSize=true ('" + name + "' is the second).");
    }
    if (!alias_is_new) {
      throw stream.error("alias",
                         "Two streams use the alias '" + s.alias + "'; every input needs its own alias.");
    }
    if (s.defines_mb_size) defining_index = index;
    options.streams.push_back(std::move(s));
  }
  std::string precision = section.get_string("precision", "float");
  std::string lower = core::to_lower(precision);
  if (lower != "float" && lower != "double") {
    throw section.error("precision", "precision is '" + precision + "'; expected 'float' or 'double'.");
  }
  // CNTK's composite factory picks float only for the exact spelling "float" (spec ctf.md §9).
  options.element_type =
      (composite ? precision == "float" : lower == "float") ? ElementType::kFloat : ElementType::kDouble;
  options.skip_sequence_ids = section.get_bool("skipSequenceIds", false);
  options.max_errors = section.get_uint("maxErrors", 0);
  options.trace_level = static_cast<int>(section.get_uint("traceLevel", 1));
  options.chunk_size_in_bytes = section.get_uint("chunkSizeInBytes", 32ull << 20);
  if (options.chunk_size_in_bytes == 0) {
    throw section.error("chunkSizeInBytes", "chunkSizeInBytes must be greater than 0.");
  }
  options.keep_data_in_memory = section.get_bool("keepDataInMemory", false);
  options.cache_index = section.get_bool("cacheIndex", false);
  return options;
}

}  // namespace cntkio
