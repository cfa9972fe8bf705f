// Assembling the config text: reading files line by line, stripping comments, expanding `include=` lines.

#include <algorithm>

#include "config/scope.hpp"
#include "core/input_file.hpp"
#include "core/logger.hpp"

namespace cntkio::config_detail {

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";
constexpr std::string_view kIncludeKeyword = "include=";

/// Calls `fn(begin, end)` for each non-empty piece of `text` between `delimiter`s (msra::strfun::split).
template <class Fn>
void for_each_piece(std::string_view text, char delimiter, Fn&& fn) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(delimiter, pos);
    if (end == std::string_view::npos) end = text.size();
    if (end > pos) fn(pos, end);
    pos = end + 1;
  }
}

}  // namespace

void strip_comments(std::string_view line, size_t& keep_begin, size_t& keep_end) {
  size_t first = line.find_first_not_of(" \t");
  if (first == std::string_view::npos || line[first] == '#') {
    keep_begin = keep_end = 0;
    return;
  }
  keep_begin = 0;
  keep_end = line.size();
  // Only the first '#' counts, and only when a blank precedes it (quotes are not considered).
  size_t hash = line.find('#', first);
  if (hash != std::string_view::npos && (line[hash - 1] == ' ' || line[hash - 1] == '\t')) {
    keep_begin = first;
    keep_end = hash;
  }
}

SourceText read_config_text(std::string_view content, const std::string& name) {
  auto file = std::make_shared<const std::string>(name);
  SourceText out;
  size_t pos = 0;
  uint64_t line_number = 1;
  while (pos < content.size()) {
    size_t eol = content.find_first_of("\r\n", pos);
    size_t next;
    if (eol == std::string_view::npos) {
      eol = next = content.size();
    } else if (content[eol] == '\r') {
      if (eol + 1 >= content.size() || content[eol + 1] != '\n') {
        throw_at(Origin{file, line_number, eol - pos + 1}, "fgets: malformed text file, CR without LF", "");
      }
      next = eol + 2;
    } else {
      next = eol + 1;
    }
    size_t start = pos;
    while (content.substr(start, eol - start).starts_with(kBom)) start += kBom.size();
    std::string_view line = content.substr(start, eol - start);
    size_t keep_begin;
    size_t keep_end;
    strip_comments(line, keep_begin, keep_end);
    if (keep_end > keep_begin) {
      uint64_t column = (start - pos) + keep_begin + 1;
      out.append(line.substr(keep_begin, keep_end - keep_begin), Origin{file, line_number, column});
      out.append("\n", Origin{file, line_number, column + (keep_end - keep_begin)});
    }
    pos = next;
    ++line_number;
  }
  return out;
}

SourceText read_config_file(const std::string& path) {
  // Directories, FIFOs and devices are refused there (they would read as empty, block, or never end).
  return read_config_text(core::read_input_file(path, "cannot open config file"), path);
}

SourceText resolve_includes(const SourceText& text, std::vector<std::string>& seen) {
  SourceText out;
  const std::string_view chars = text.view();
  for_each_piece(chars, '\n', [&](size_t begin, size_t end) {
    std::string_view line = chars.substr(begin, end - begin);
    if (!line.starts_with(kIncludeKeyword)) {
      out.append(text, begin, end + 1);  // the line and its LF (or nothing past the end)
      if (end >= chars.size()) out.append("\n", text.origin_at(end));
      return;
    }
    std::string_view paths = line.substr(kIncludeKeyword.size());
    if (paths.find('$') != std::string_view::npos) {
      throw_at(text.origin_at(begin),
               "Variable usage (eg, \"$varName$\") not supported in \"include\" statements. Explicit path to "
               "config file must be provided",
               "");
    }
    for_each_piece(paths, '+', [&](size_t path_begin, size_t path_end) {
      std::string path(paths.substr(path_begin, path_end - path_begin));
      // CNTK warns and skips a file that was already read.
      if (std::find(seen.begin(), seen.end(), path) != seen.end()) {
        core::Logger().log(
            core::LogLevel::kWarning,
            "Warning: Config file included multiple times.  Not including config file again: " + path);
        return;
      }
      seen.push_back(path);
      SourceText included;
      try {
        included = read_config_file(path);
      } catch (const IoError& e) {
        const Origin at = text.origin_at(begin);
        SourceLocation where;
        if (at.known()) where.file = *at.file;
        where.line = at.line;
        throw IoError(e, where);  // the include= line that names it
      }
      out.append(resolve_includes(included, seen));
    });
  });
  return out;
}

}  // namespace cntkio::config_detail
