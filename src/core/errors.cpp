#include "cntkio/errors.hpp"

#include <cstring>

namespace cntkio {

// Strings are built with append() rather than `"literal" + std::string`: GCC 12 emits a false -Wrestrict
// warning for the latter at -O2.
namespace {
void append_all(std::string&) {}
template <typename First, typename... Rest>
void append_all(std::string& out, const First& first, const Rest&... rest) {
  out.append(first);
  append_all(out, rest...);
}
}  // namespace

std::string Error::printable(const std::string& text) {
  auto is_control = [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && c != '\t' && c != '\n') || byte == 0x7F;
  };
  bool any = false;
  for (char c : text) any = any || is_control(c);
  if (!any) return text;
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 16);
  for (char c : text) {
    if (!is_control(c)) {
      out.push_back(c);
      continue;
    }
    const auto byte = static_cast<unsigned char>(c);
    const char escaped[] = {'\\', 'x', kHex[byte >> 4], kHex[byte & 15]};
    out.append(escaped, sizeof escaped);
  }
  return out;
}

namespace {
// A path as messages show it: a URL's password (`https://user:secret@host/...`) is not repeated in logs.
std::string shown_path(const std::string& path) {
  const size_t scheme = path.find("://");
  if (scheme == std::string::npos) return path;
  const size_t authority = scheme + 3;
  const size_t end = path.find_first_of("/?#", authority);
  const size_t at = path.rfind('@', end == std::string::npos ? std::string::npos : end);
  if (at == std::string::npos || at < authority) return path;
  const size_t colon = path.find(':', authority);
  if (colon == std::string::npos || colon > at) return path;
  return path.substr(0, colon + 1) + "***" + path.substr(at);
}
}  // namespace

std::string SourceLocation::describe() const {
  std::string out;
  auto add = [&out](const auto&... parts) {
    if (!out.empty()) out.append(", ");
    append_all(out, parts...);
  };
  if (!file.empty()) add("file '", shown_path(file), "'");
  if (line) add("line ", std::to_string(*line));
  if (column) add("column ", std::to_string(*column));
  if (byte_offset) {
    if (line || column) {
      append_all(out, " (byte offset ", std::to_string(*byte_offset), ")");
    } else {
      add("byte offset ", std::to_string(*byte_offset));
    }
  }
  if (!stream.empty()) add("stream '", stream, "'");
  if (!sequence_key.empty()) add("sequence ", sequence_key);
  if (out.empty()) return out;
  std::string bracketed;
  append_all(bracketed, "[", out, "]");
  return bracketed;
}

namespace {
std::string config_message(const std::string& message, const std::string& key_path, const std::string& file,
                           uint64_t line, uint64_t column) {
  std::string where = file;
  if (line != 0) append_all(where, where.empty() ? "line " : ":", std::to_string(line));
  if (column != 0) append_all(where, ":", std::to_string(column));
  std::string out;
  if (!where.empty()) append_all(out, where, ": ");
  out.append(message);
  if (!key_path.empty()) append_all(out, " (key '", key_path, "')");
  return out;
}

std::string io_message(const std::string& what, const std::string& path, int error_number) {
  std::string out;
  append_all(out, what, " '", shown_path(path), "'");
  if (error_number != 0) append_all(out, ": ", std::strerror(error_number));
  return out;
}
}  // namespace

ConfigError::ConfigError(const std::string& message, std::string key_path, std::string file, uint64_t line,
                         uint64_t column)
    : Error(WhatText{config_message(message, key_path, file, line, column)}, message),
      key_path_(std::move(key_path)),
      file_(std::move(file)),
      line_(line),
      column_(column) {}

IoError::IoError(const std::string& what, const std::string& path, int error_number)
    : Error(io_message(what, path, error_number)), path_(path), errno_(error_number) {}

IoError::IoError(const IoError& error, const SourceLocation& named_at)
    : Error(WhatText{std::string(error.what()) + " (named at " + named_at.describe() + ")"},
            error.cntk_text()),
      path_(error.path()),
      errno_(error.error_number()) {}

}  // namespace cntkio
