/// @file
/// cntkio exception types.
///
/// Every error cntkio raises derives from cntkio::Error (itself a std::runtime_error), so a caller that only
/// wants "did it work" catches one type. The subclasses carry structured location data so that tools (the
/// CLI, the Python module) can present it, and what() always holds a complete, human-readable message.
///
/// Where CNTK raised an exception whose text users (and CNTK's own tests) match on, cntk_text() returns that
/// text unchanged and what() is the same text followed by cntkio's location details.
///
/// Thread-safety: exception objects are immutable after construction.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace cntkio {

/// Base class of every cntkio exception.
class Error : public std::runtime_error {
 public:
  /// An error whose what() and cntk_text() are both `message`.
  explicit Error(const std::string& message) : std::runtime_error(printable(message)), cntk_text_(message) {}
  /// `cntk_text` is the text CNTK used for this condition; `details` is appended to it in what().
  Error(const std::string& cntk_text, const std::string& details)
      : std::runtime_error(printable(details.empty() ? cntk_text : cntk_text + " " + details)),
        cntk_text_(cntk_text) {}

  /// The message without cntkio's added location details (equals CNTK's text where CNTK had one).
  const std::string& cntk_text() const noexcept { return cntk_text_; }

 protected:
  /// For subclasses whose what() places the details elsewhere than after the text.
  struct WhatText {
    std::string text;  ///< the complete what() text
  };
  /// An error whose what() is `what.text` and whose cntk_text() is `cntk_text`.
  Error(WhatText what, std::string cntk_text)
      : std::runtime_error(printable(what.text)), cntk_text_(std::move(cntk_text)) {}

 private:
  /// `text` with NUL and the other control bytes but TAB and LF written as `\xHH`: what() is a C string,
  /// which a NUL from the input data would cut short, losing the location after it.
  static std::string printable(const std::string& text);

  std::string cntk_text_;
};

/// Where in an input file something went wrong. Unknown fields stay empty.
struct SourceLocation {
  std::string file;                     ///< path as configured
  std::optional<uint64_t> line;         ///< 1-based line number
  std::optional<uint64_t> column;       ///< 1-based column (bytes)
  std::optional<uint64_t> byte_offset;  ///< 0-based byte offset in the file
  std::string stream;                   ///< stream name, if the error concerns one stream
  std::string sequence_key;             ///< sequence key, if known

  /// "file 'x.txt', line 3, column 7 (byte offset 41), stream 'features', sequence 12"
  std::string describe() const;
};

/// Malformed input data (text or binary formats).
class FormatError : public Error {
 public:
  /// `cntk_text` says what is wrong; what() appends the description of `location`.
  FormatError(const std::string& cntk_text, SourceLocation location)
      : Error(cntk_text, location.describe()), location_(std::move(location)) {}
  /// As above, with `hint` (what to do about it) between the text and the location in what().
  FormatError(const std::string& cntk_text, SourceLocation location, const std::string& hint)
      : Error(cntk_text, hint + (location.describe().empty() ? "" : " " + location.describe())),
        location_(std::move(location)) {}
  /// Where the malformed data is.
  const SourceLocation& location() const noexcept { return location_; }

 private:
  SourceLocation location_;
};

/// A malformed or inconsistent configuration. what() is "file:line:column: message (key 'path')";
/// cntk_text() is the message alone.
class ConfigError : public Error {
 public:
  /// `key_path` like "Simple.reader.input.features.dim"; `file`, `line`, `column` locate the text if known.
  ConfigError(const std::string& message, std::string key_path = {}, std::string file = {}, uint64_t line = 0,
              uint64_t column = 0);
  /// Dotted path of the offending key ("Simple.reader.input.features.dim"); empty if unknown.
  const std::string& key_path() const noexcept { return key_path_; }
  /// The config file (or `<override N>`, `<text>`) holding the offending text; empty if unknown.
  const std::string& file() const noexcept { return file_; }
  uint64_t line() const noexcept { return line_; }      ///< 1-based, 0 if unknown
  uint64_t column() const noexcept { return column_; }  ///< 1-based, 0 if unknown

 private:
  std::string key_path_;
  std::string file_;
  uint64_t line_;
  uint64_t column_;
};

/// Failure of the operating system to open, read or write a file.
class IoError : public Error {
 public:
  /// `what` says what was attempted ("cannot open"), `error_number` is errno (0 if none).
  IoError(const std::string& what, const std::string& path, int error_number);
  /// `error` with where the file was named (the list line that names it) appended to what(); cntk_text()
  /// stays the same.
  IoError(const IoError& error, const SourceLocation& named_at);
  /// The file the operation was about.
  const std::string& path() const noexcept { return path_; }
  /// The errno of the failed call, 0 if none.
  int error_number() const noexcept { return errno_; }

 private:
  std::string path_;
  int errno_;
};

/// A request the library cannot satisfy with the given arguments (bad options, API misuse).
class UsageError : public Error {
 public:
  using Error::Error;  ///< the constructors of Error
};

}  // namespace cntkio
