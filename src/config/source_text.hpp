// Text that remembers where each of its characters came from.
//
// CNTK keeps config values as plain strings and re-parses them whenever a nested block is fetched, after
// substituting `$var$` references. To still report file, line and column for an error found during such a
// late re-parse, every string the config module handles is a SourceText: the characters plus a sorted list of
// marks, each saying "from this offset on, the characters come from file F starting at line L, column C, one
// column per byte". Slicing, appending and substituting carry the marks along.
//
// Thread-safety: a SourceText is a plain value; const access from several threads is safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cntkio::config_detail {

/// Where one character came from. `file` is null when unknown (text given through the API).
struct Origin {
  std::shared_ptr<const std::string> file;
  uint64_t line = 0;    ///< 1-based
  uint64_t column = 0;  ///< 1-based, bytes

  bool known() const { return file != nullptr; }
};

class SourceText {
 public:
  SourceText() = default;
  /// Text without any known origin.
  explicit SourceText(std::string chars);

  /// `content` as it appears in `file` starting at (`line`, `column`); every LF starts a new line at
  /// column 1.
  static SourceText from_source(std::string_view content, const std::shared_ptr<const std::string>& file,
                                uint64_t line = 1, uint64_t column = 1);

  const std::string& str() const { return chars_; }
  std::string_view view() const { return chars_; }
  size_t size() const { return chars_.size(); }
  bool empty() const { return chars_.empty(); }
  char operator[](size_t i) const { return chars_[i]; }

  /// Origin of the character at `pos`; `pos == size()` gives the position just after the last character.
  Origin origin_at(size_t pos) const;

  /// Characters [begin, end) with their origins.
  SourceText slice(size_t begin, size_t end) const;

  /// Appends `other[begin, end)`.
  void append(const SourceText& other, size_t begin, size_t end);
  void append(const SourceText& other) { append(other, 0, other.size()); }
  /// Appends `chars` as coming from `origin` (one column per byte; `chars` must not hold LF unless the
  /// origin is unknown).
  void append(std::string_view chars, const Origin& origin);

 private:
  struct Mark {
    size_t at;  ///< offset in chars_ where this run starts
    Origin origin;
  };

  void add_mark(size_t at, const Origin& origin);
  /// Index of the mark that covers `pos`, or -1 if none does.
  std::ptrdiff_t mark_index(size_t pos) const;

  std::string chars_;
  std::vector<Mark> marks_;
};

}  // namespace cntkio::config_detail
