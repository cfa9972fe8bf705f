#include "cntkio/errors.hpp"

#include <cstring>

namespace cntkio {

std::string SourceLocation::describe() const {
  std::string out;
  auto add = [&out](const std::string& part) {
    if (!out.empty()) out += ", ";
    out += part;
  };
  if (!file.empty()) add("file '" + file + "'");
  if (line) add("line " + std::to_string(*line));
  if (column) add("column " + std::to_string(*column));
  if (byte_offset) {
    if (line || column) {
      out += " (byte offset " + std::to_string(*byte_offset) + ")";
    } else {
      add("byte offset " + std::to_string(*byte_offset));
    }
  }
  if (!stream.empty()) add("stream '" + stream + "'");
  if (!sequence_key.empty()) add("sequence " + sequence_key);
  return out.empty() ? out : "[" + out + "]";
}

namespace {
std::string config_message(const std::string& message, const std::string& key_path, const std::string& file,
                           uint64_t line, uint64_t column) {
  std::string where;
  if (!file.empty()) where += file;
  if (line != 0) {
    where.append(where.empty() ? "line " : ":");
    where.append(std::to_string(line));
  }
  if (column != 0) {
    where.append(":");
    where.append(std::to_string(column));
  }
  std::string out;
  if (!where.empty()) out += where + ": ";
  out += message;
  if (!key_path.empty()) out += " (key '" + key_path + "')";
  return out;
}
}  // namespace

ConfigError::ConfigError(const std::string& message, std::string key_path, std::string file, uint64_t line,
                         uint64_t column)
    : Error(config_message(message, key_path, file, line, column)),
      key_path_(std::move(key_path)),
      file_(std::move(file)),
      line_(line),
      column_(column) {}

IoError::IoError(const std::string& what, const std::string& path, int error_number)
    : Error(what + " '" + path + "'" + (error_number ? std::string(": ") + std::strerror(error_number) : "")),
      path_(path),
      errno_(error_number) {}

}  // namespace cntkio
