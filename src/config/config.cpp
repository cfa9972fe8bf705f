// The public Config API: assembling and parsing the text, scoped look-ups, typed conversions.
#include "cntkio/config.hpp"

#include <locale.h>
#include <strings.h>

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "config/scope.hpp"

namespace cntkio {

using config_detail::Origin;
using config_detail::Scope;
using config_detail::SourceText;

namespace {

constexpr std::string_view kDefaultLiteral = "default";

/// A value found by a scoped look-up.
struct Found {
  std::shared_ptr<const Scope> scope;  ///< where the key was found
  const std::string* key;              ///< its stored spelling
  const SourceText* raw;               ///< its unresolved text
};

std::optional<Found> find_scoped(const std::shared_ptr<const Scope>& start, std::string_view key) {
  for (std::shared_ptr<const Scope> scope = start; scope != nullptr; scope = scope->parent) {
    auto it = scope->entries.find(key);
    if (it != scope->entries.end()) return Found{scope, &it->first, &it->second};
  }
  return std::nullopt;
}

std::string key_path(const Scope& scope, std::string_view key) {
  return scope.path + "." + std::string(key);
}

SourceText resolved(const Found& found) {
  return config_detail::resolve_variables(*found.scope, *found.key, *found.raw);
}

[[noreturn]] void throw_for(const Found& found, const std::string& message) {
  config_detail::throw_at(found.raw->origin_at(0), message, key_path(*found.scope, *found.key));
}

/// CNTK's mandatory accessor `config(key)`: missing, `default` or empty after resolution is an error.
std::pair<Found, SourceText> required(const std::shared_ptr<const Scope>& scope, std::string_view key) {
  std::optional<Found> found = find_scoped(scope, key);
  if (found && found->raw->view() != kDefaultLiteral) {
    SourceText value = resolved(*found);
    if (!value.empty()) return {*found, std::move(value)};
  }
  config_detail::throw_at(
      scope->source.origin_at(0),
      "configparameters: required parameter missing: " + scope->path + ":" + std::string(key),
      key_path(*scope, key));
}

bool is_block(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && (text[first] == '[' || text[first] == '{');
}

// ---- conversions ----

std::string quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('\'');
  out.append(text);
  out.push_back('\'');
  return out;
}

std::optional<bool> parse_bool(std::string_view text) {
  for (std::string_view yes : {"t", "true", "T", "True", "TRUE", "1"}) {
    if (text == yes) return true;
  }
  for (std::string_view no : {"f", "false", "F", "False", "FALSE", "0", ""}) {
    if (text == no) return false;
  }
  return std::nullopt;
}

std::string bool_message(std::string_view text) {
  return "ConfigValue (bool): boolean argument expected, got " + quoted(text) +
         " (use true/false, True/False, TRUE/FALSE, t/f, T/F or 1/0)";
}

std::optional<uint64_t> parse_uint(std::string_view text) {
  const std::string copy(text);
  char* stop = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(copy.c_str(), &stop, 10);
  if (copy.empty() || stop != copy.c_str() + copy.size() || errno == ERANGE) return std::nullopt;
  return static_cast<uint64_t>(value);
}

std::string uint_message(std::string_view text) {
  return "ConfigValue (uint64_t): invalid input string " + quoted(text) +
         " (expected a base-10 unsigned integer)";
}

std::optional<int64_t> parse_int(std::string_view text) {
  const std::string copy(text);
  char* stop = nullptr;
  errno = 0;
  long long value = std::strtoll(copy.c_str(), &stop, 10);
  if (copy.empty() || stop != copy.c_str() + copy.size() || errno == ERANGE) return std::nullopt;
  return static_cast<int64_t>(value);
}

std::string int_message(std::string_view text) {
  return "ConfigValue (int64_t): invalid input string " + quoted(text) + " (expected a base-10 integer)";
}

std::optional<double> parse_double(std::string_view text) {
  // strtod in the "C" locale whatever the process locale is.
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  const std::string copy(text);
  char* stop = nullptr;
  double value = strtod_l(copy.c_str(), &stop, c_locale);
  if (copy.empty() || *stop != '\0') {
    // CNTK reads MSVC's "1.#INF" spelling as +infinity, whatever the sign.
    if (*stop != '\0' && strncasecmp(stop, "#inf", 4) == 0) return std::numeric_limits<double>::infinity();
    return std::nullopt;
  }
  if (stop != copy.c_str() + copy.size()) return std::nullopt;  // embedded NUL
  return value;
}

std::string double_message(std::string_view text) {
  return "ConfigValue (double): invalid input string " + quoted(text) + " (expected a number)";
}

/// Typed accessor with a default: scoped, `default` or missing gives `def`.
template <class T, class Parse, class Message>
T typed(const std::shared_ptr<const Scope>& scope, std::string_view key, T def, Parse parse,
        Message message) {
  std::optional<Found> found = find_scoped(scope, key);
  if (!found || found->raw->view() == kDefaultLiteral) return def;
  SourceText value = resolved(*found);
  std::optional<T> converted = parse(value.view());
  if (!converted) throw_for(*found, message(value.view()));
  return *converted;
}

}  // namespace

namespace config_detail {
struct ConfigAccess {
  static Config make(std::shared_ptr<Scope> scope) { return Config(std::move(scope)); }

  /// Appends the overrides to the assembled file text, expands includes and parses the result as `global`.
  static Config parse_global(SourceText text, const std::vector<std::string>& overrides,
                             std::vector<std::string>& seen) {
    // Command-line arguments are appended verbatim, one line each, without comment stripping.
    for (size_t i = 0; i < overrides.size(); ++i) {
      auto name = std::make_shared<const std::string>("<override " + std::to_string(i + 1) + ">");
      SourceText line = SourceText::from_source(overrides[i], name);
      text.append(line);
      text.append("\n", line.origin_at(line.size()));
    }
    auto scope = std::make_shared<Scope>();
    scope->path = "global";
    scope->source = resolve_includes(text, seen);
    parse_dictionary(scope->source, *scope);
    return make(std::move(scope));
  }
};
}  // namespace config_detail

using config_detail::ConfigAccess;

Config::Config() : scope_(std::make_shared<Scope>()) {
  scope_->path = "global";
}

Config::Config(std::shared_ptr<config_detail::Scope> scope) : scope_(std::move(scope)) {}

Config Config::from_files(const std::vector<std::string>& files, const std::vector<std::string>& overrides) {
  std::vector<std::string> seen;
  SourceText text;
  for (const std::string& file : files) {
    for (const std::string& other : seen) {
      if (other == file) {
        throw ConfigError("Cannot specify same config file multiple times at the command line.", "", file);
      }
    }
    seen.push_back(file);
    text.append(config_detail::read_config_file(file));
  }
  return ConfigAccess::parse_global(std::move(text), overrides, seen);
}

Config Config::from_text(std::string_view text, const std::string& source_name,
                         const std::vector<std::string>& overrides) {
  std::vector<std::string> seen;
  return ConfigAccess::parse_global(config_detail::read_config_text(text, source_name), overrides, seen);
}

const std::string& Config::path() const {
  return scope_->path;
}

bool Config::exists(std::string_view key) const {
  return find_scoped(scope_, key).has_value();
}

bool Config::exists_current(std::string_view key) const {
  return scope_->entries.contains(key);
}

std::vector<std::string> Config::keys() const {
  std::vector<std::string> out;
  out.reserve(scope_->entries.size());
  for (const auto& entry : scope_->entries) out.push_back(entry.first);
  return out;
}

std::string Config::get_string(std::string_view key) const {
  return required(scope_, key).second.str();
}

std::optional<std::string> Config::find_string(std::string_view key) const {
  std::optional<Found> found = find_scoped(scope_, key);
  if (!found || found->raw->view() == kDefaultLiteral) return std::nullopt;
  return resolved(*found).str();
}

std::string Config::get_string(std::string_view key, const std::string& def) const {
  std::optional<std::string> value = find_string(key);
  return value ? *value : def;
}

bool Config::get_bool(std::string_view key, bool def) const {
  return typed<bool>(scope_, key, def, parse_bool, bool_message);
}

uint64_t Config::get_uint(std::string_view key, uint64_t def) const {
  return typed<uint64_t>(scope_, key, def, parse_uint, uint_message);
}

uint64_t Config::get_uint(std::string_view key) const {
  auto [found, value] = required(scope_, key);
  std::optional<uint64_t> converted = parse_uint(value.view());
  if (!converted) throw_for(found, uint_message(value.view()));
  return *converted;
}

int64_t Config::get_int(std::string_view key, int64_t def) const {
  return typed<int64_t>(scope_, key, def, parse_int, int_message);
}

double Config::get_double(std::string_view key, double def) const {
  return typed<double>(scope_, key, def, parse_double, double_message);
}

Config Config::get_block(std::string_view key) const {
  auto [found, value] = required(scope_, key);
  if (!is_block(value.view())) {
    throw_for(found,
              "the value of '" + *found.key + "' is not a block ([...] or {...}): '" + value.str() + "'");
  }
  auto child = std::make_shared<Scope>();
  child->path = key_path(*found.scope, *found.key);
  // The block's parent is the dictionary that asked for it, not the one it was found in (CNTK's mandatory
  // accessor re-parents the value): a `reader` block written at the top level and taken from section `Test`
  // sees Test's keys. Its variables were resolved where it was found.
  child->parent = scope_;
  child->source = std::move(value);
  config_detail::parse_dictionary(child->source, *child);
  return ConfigAccess::make(std::move(child));
}

std::vector<std::string> Config::get_array(std::string_view key) const {
  auto [found, value] = required(scope_, key);
  std::vector<std::string> out;
  for (const SourceText& element : config_detail::parse_array(value, key_path(*found.scope, *found.key))) {
    out.push_back(element.str());
  }
  return out;
}

std::vector<Config> Config::get_block_array(std::string_view key) const {
  auto [found, value] = required(scope_, key);
  const std::string array_path = key_path(*found.scope, *found.key);
  std::vector<SourceText> elements = config_detail::parse_array(value, array_path);
  std::vector<Config> out;
  out.reserve(elements.size());
  for (size_t i = 0; i < elements.size(); ++i) {
    auto child = std::make_shared<Scope>();
    child->path = array_path + "[" + std::to_string(i) + "]";
    if (!is_block(elements[i].view())) {
      config_detail::throw_at(elements[i].origin_at(0),
                              "array element " + std::to_string(i) + " of '" + *found.key +
                                  "' is not a block ([...] or {...}): '" + elements[i].str() + "'",
                              child->path);
    }
    child->source = std::move(elements[i]);  // array elements have no parent scope
    config_detail::parse_dictionary(child->source, *child);
    out.push_back(ConfigAccess::make(std::move(child)));
  }
  return out;
}

void Config::set(std::string_view key, std::string_view value) {
  if (scope_.use_count() > 1) scope_ = std::make_shared<Scope>(*scope_);  // copy on write
  config_detail::insert_value(*scope_, key, SourceText(std::string(value)));
}

void Config::validate_variables() const {
  config_detail::resolve_variables(*scope_, {}, scope_->source);
}

SourceLocation Config::location(std::string_view key) const {
  SourceLocation location;
  Origin origin = scope_->source.origin_at(0);
  if (std::optional<Found> found = find_scoped(scope_, key)) origin = found->raw->origin_at(0);
  if (origin.known()) {
    location.file = *origin.file;
    location.line = origin.line;
    location.column = origin.column;
  }
  return location;
}

ConfigError Config::error(std::string_view key, const std::string& message) const {
  std::optional<Found> found = find_scoped(scope_, key);
  Origin origin = found ? found->raw->origin_at(0) : scope_->source.origin_at(0);
  std::string path = found ? key_path(*found->scope, *found->key) : key_path(*scope_, key);
  return ConfigError(message, path, origin.known() ? *origin.file : std::string(), origin.line,
                     origin.column);
}

bool Config::to_bool(std::string_view text, const std::string& what) {
  std::optional<bool> value = parse_bool(text);
  if (!value) throw ConfigError(bool_message(text), what);
  return *value;
}

uint64_t Config::to_uint(std::string_view text, const std::string& what) {
  std::optional<uint64_t> value = parse_uint(text);
  if (!value) throw ConfigError(uint_message(text), what);
  return *value;
}

int64_t Config::to_int(std::string_view text, const std::string& what) {
  std::optional<int64_t> value = parse_int(text);
  if (!value) throw ConfigError(int_message(text), what);
  return *value;
}

double Config::to_double(std::string_view text, const std::string& what) {
  std::optional<double> value = parse_double(text);
  if (!value) throw ConfigError(double_message(text), what);
  return *value;
}

}  // namespace cntkio
