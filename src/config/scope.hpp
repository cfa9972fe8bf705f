// Internals of the config module: the dictionary scope, the CNTK-compatible record parser, file reading and
// `$var$` resolution. See spec/config.md for the rules reproduced here.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/errors.hpp"
#include "config/source_text.hpp"

namespace cntkio::config_detail {

/// Orders keys as CNTK's `nocase_compare` does: byte-wise after ASCII lowercasing.
struct KeyLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const;
};

/// One dictionary: keys (first spelling kept) mapped to raw value text, plus the enclosing scope.
struct Scope {
  std::string path;                     ///< "global.Simple.reader"
  std::shared_ptr<const Scope> parent;  ///< null for the root and for array elements
  std::map<std::string, SourceText, KeyLess> entries;
  SourceText source;  ///< the text this scope was parsed from (used for whole-text validation)
};

/// Throws a ConfigError located at `origin`.
[[noreturn]] void throw_at(const Origin& origin, const std::string& message, const std::string& key_path);

// ---- reading (reader.cpp) ----

/// Reads a config file the way CNTK's ReadConfigFile does: lines split at LF/CRLF (lone CR is an error), BOMs
/// at line starts dropped, comments stripped, non-empty lines joined with LF. Throws IoError if unreadable.
SourceText read_config_file(const std::string& path);
/// The same for text held in memory; `name` is reported as the file.
SourceText read_config_text(std::string_view content, const std::string& name);
/// CNTK's StripComments applied to `text[begin, end)` (one line): returns the kept range as [first, last).
void strip_comments(std::string_view line, size_t& keep_begin, size_t& keep_end);
/// Replaces every `include=` line (column 0) by the files it names, recursively; `seen` holds files read.
SourceText resolve_includes(const SourceText& text, std::vector<std::string>& seen);

// ---- parsing (parser.cpp) ----

/// Position of the bracket that closes the one at `pos`, npos if `text[pos]` opens none. Throws ConfigError
/// ("unmatched bracket found in parameters", "no closing X found in parameters").
size_t match_bracket(const SourceText& text, size_t pos, const std::string& key_path);

/// Parses `text` as a dictionary (records `key = value`) into `scope.entries`.
void parse_dictionary(const SourceText& text, Scope& scope);
/// Parses `text` as a CNTK array (`:`-separated, `value*count` repeats, bracketed elements kept whole).
std::vector<SourceText> parse_array(const SourceText& text, const std::string& key_path);
/// CNTK's Insert: a new value starting with `[` is appended to a non-empty existing one, anything else
/// replaces it; the first spelling of the key is kept.
void insert_value(Scope& scope, std::string_view key, SourceText value);

// ---- variables (resolve.cpp) ----

/// Resolves `$name$` references in `text` within `scope` (and its parents), line by line, re-stripping
/// comments as CNTK does. `key` names the value being resolved (for cycle detection; empty for whole text).
SourceText resolve_variables(const Scope& scope, std::string_view key, const SourceText& text);

}  // namespace cntkio::config_detail
