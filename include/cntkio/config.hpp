/// @file
/// CNTK's configuration language (the "ConfigParameters" language of CNTK's reader sections).
///
/// A Config is one dictionary scope: case-insensitive keys mapping to raw value text, plus a parent scope.
/// Values are kept as text and interpreted on access, as CNTK does: `$name$` references are resolved at
/// the moment a value is fetched (so later overrides are seen by earlier references), typed accessors
/// convert with CNTK's spellings, and nested blocks (`[...]`, `{...}`) become child Configs whose parent is
/// the scope they were found in. Array elements (`(a:b:[...])`) have no parent.
///
/// Thread-safety: a Config is an immutable value after construction except for set(); concurrent const
/// access is safe, set() must not race with anything. Copies share their scope until set() is called on one
/// of them (copy on write): set() changes only that Config, and blocks fetched from it before the call keep
/// seeing the old values.
///
/// Errors carry the file, 1-based line and column of the offending text even when it is found late (when a
/// nested block is fetched and re-parsed); `<override N>` names the N-th override string.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/errors.hpp"

namespace cntkio {

namespace config_detail {
struct Scope;
struct ConfigAccess;
}  // namespace config_detail

/// One dictionary scope of a parsed configuration.
class Config {
 public:
  /// An empty scope named "global".
  Config();

  /// Reads config files in order, then appends each override (`key=value`, may hold several records
  /// separated by `,`/`;`) as one line of its own; later assignments win and `[...]` values merge into
  /// existing blocks. Expands `include=` lines. Throws ConfigError (with file, line, column) or IoError.
  static Config from_files(const std::vector<std::string>& files,
                           const std::vector<std::string>& overrides = {});

  /// Parses `text` as a whole configuration; `source_name` is used in error messages.
  static Config from_text(std::string_view text, const std::string& source_name = "<text>",
                          const std::vector<std::string>& overrides = {});

  /// Dotted path of this scope from the root ("global.Simple.reader"); array elements end in "[i]".
  const std::string& path() const;

  /// Whether `key` exists here or in any enclosing scope.
  bool exists(std::string_view key) const;
  /// Whether `key` exists in this scope itself.
  bool exists_current(std::string_view key) const;

  /// Keys of this scope only, in CNTK's iteration order (case-insensitive alphabetical), first spelling.
  std::vector<std::string> keys() const;

  /// The value of `key` (scoped lookup), `$var$` resolved. Throws ConfigError if missing or empty.
  std::string get_string(std::string_view key) const;
  /// As get_string, but std::nullopt if the key does not exist in any scope (or its value is `default`); an
  /// empty value is returned as is.
  std::optional<std::string> find_string(std::string_view key) const;
  /// Scoped; `def` if missing or equal to the literal `default`.
  std::string get_string(std::string_view key, const std::string& def) const;

  /// CNTK booleans: t/true/T/True/TRUE/1 and f/false/F/False/FALSE/0/empty. Scoped; `def` if missing.
  bool get_bool(std::string_view key, bool def) const;
  /// Base-10 unsigned (strtoull rules; `-1` wraps to 2^64-1). Scoped; `def` if missing.
  uint64_t get_uint(std::string_view key, uint64_t def) const;
  uint64_t get_uint(std::string_view key) const;  ///< required
  /// Base-10 signed. Scoped; `def` if missing.
  int64_t get_int(std::string_view key, int64_t def) const;
  /// strtod rules plus CNTK's `1.#INF`. Scoped; `def` if missing.
  double get_double(std::string_view key, double def) const;

  /// The block value of `key` (scoped lookup) as a child scope whose parent is the scope where the key was
  /// found. Throws ConfigError if missing.
  Config get_block(std::string_view key) const;

  /// The elements of the array value of `key` (`(a:b)`, `{1:2}`, `a:b`, `v*3`). Each element is raw text with
  /// `$var$` resolved; a bracketed element keeps its brackets. Throws ConfigError if missing.
  std::vector<std::string> get_array(std::string_view key) const;
  /// The elements of `key`, each a block, as free-standing scopes (no parent), paths like
  /// "global.x.reader.deserializers[0]". Throws ConfigError if missing or if an element is not a block.
  std::vector<Config> get_block_array(std::string_view key) const;

  /// Inserts or replaces `key` in this scope (a `[...]` value merges into an existing block, as CNTK does).
  /// `value` is stored as raw text (no quote removal).
  void set(std::string_view key, std::string_view value);

  /// Resolves every `$name$` in this scope's whole text (for the root: all files and overrides) and discards
  /// the result, as CNTK's test harness does: throws ConfigError for an unknown variable, `$$` or a cycle.
  void validate_variables() const;

  /// Where the value of `key` (scoped lookup) was written; this scope's own location if `key` is missing.
  /// Fields stay empty where unknown (values given through set()).
  SourceLocation location(std::string_view key) const;
  /// A ConfigError about `key` with its key path and location, for semantic checks done by readers.
  ConfigError error(std::string_view key, const std::string& message) const;

  /// Converters with CNTK's rules, for text already fetched; `what` names the key in error messages.
  /// to_bool: the spellings of get_bool. Throws ConfigError.
  static bool to_bool(std::string_view text, const std::string& what);
  /// The rules of get_uint. Throws ConfigError.
  static uint64_t to_uint(std::string_view text, const std::string& what);
  /// The rules of get_int. Throws ConfigError.
  static int64_t to_int(std::string_view text, const std::string& what);
  /// The rules of get_double. Throws ConfigError.
  static double to_double(std::string_view text, const std::string& what);

 private:
  friend struct config_detail::ConfigAccess;
  explicit Config(std::shared_ptr<config_detail::Scope> scope);
  std::shared_ptr<config_detail::Scope> scope_;
};

}  // namespace cntkio
