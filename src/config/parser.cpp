// CNTK's record parser (ConfigParser::Parse), bracket matching, and the dictionary and array value parsers.
#include <cerrno>
#include <climits>
#include <cstdlib>

#include "config/scope.hpp"

namespace cntkio::config_detail {

namespace {

constexpr std::string_view kOpeners = "[{(\"";
constexpr std::string_view kClosers = "]})\"";
constexpr std::string_view kBlanks = " \t";
constexpr auto kNpos = std::string::npos;

std::string location_text(const Origin& origin) {
  if (!origin.known()) return "an unknown position";
  return "line " + std::to_string(origin.line) + ", column " + std::to_string(origin.column);
}

/// `text[begin, end)` without leading and trailing spaces/TABs.
SourceText trimmed(const SourceText& text, size_t begin, size_t end) {
  std::string_view part = text.view().substr(begin, end - begin);
  size_t first = part.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  size_t last = part.find_last_not_of(kBlanks);
  return text.slice(begin + first, begin + last + 1);
}

std::string trimmed_string(std::string_view part) {
  size_t first = part.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  size_t last = part.find_last_not_of(kBlanks);
  return std::string(part.substr(first, last - first + 1));
}

/// Splits `text` into records and hands each to `on_record(begin, end)`, which returns where scanning goes
/// on. Records end at LF, CR, ',' or `separator`; a bracketed run is never split. A text (or record) that
/// starts with a bracket is entered: its content is scanned as records up to the matching closer ("content
/// level"), and a separator character right after the opener replaces `separator` inside it.
template <class OnRecord>
void split_records(const SourceText& text, char separator, const std::string& key_path,
                   OnRecord&& on_record) {
  static constexpr std::string_view kCustomSeparators = "`~!@$%^&*_-+|:;,?.";
  const std::string& s = text.str();
  const size_t length = s.size();
  std::string separators = ",\r\n";
  separators += separator;
  auto record_enders = [&separators] { return separators + std::string(kOpeners); };
  std::string enders = record_enders();

  size_t block_end = length;  // closer of the block whose content is being scanned, else the text end
  bool in_block = false;
  size_t pos = 0;
  while (pos != kNpos) {
    size_t start = s.find_first_not_of(separators, pos);
    if (start == kNpos) break;
    start = s.find_first_not_of(kBlanks, start);
    if (start == kNpos) break;

    size_t end;
    bool quoted = false;
    size_t closer = match_bracket(text, start, key_path);
    if (closer != kNpos) {
      if (!in_block) {
        ++start;
        std::string_view rest = std::string_view(s).substr(start);
        // A leading '.' of a path ("..", "./", ".\") is not a separator.
        if (kCustomSeparators.find(s[start]) != std::string_view::npos && !rest.starts_with("..") &&
            !rest.starts_with(".\\") && !rest.starts_with("./") && !rest.starts_with("\\\\")) {
          separators.back() = s[start];
          enders = record_enders();
          ++start;
        }
        block_end = closer;
        in_block = true;
        pos = start;
        continue;
      }
      if (s[closer] == '"') {
        ++start;  // a quoted record is handed over without its quotes
        end = closer;
        quoted = true;
      } else {
        end = closer + 1;
      }
    } else {
      end = s.find_first_of(enders, start);
      if (end != kNpos) {
        size_t inner = match_bracket(text, end, key_path);
        if (inner != kNpos) end = inner + 1;
      }
      if (end == kNpos || end > block_end) {
        end = block_end;
        if (start >= length) break;
      }
    }

    if (end > start) end = on_record(start, end);

    if (end == block_end) {
      ++end;  // past the closer: leave content level
      block_end = length;
      separators.back() = separator;
      enders = record_enders();
      in_block = false;
    }
    if (quoted) ++end;
    pos = end;
  }
}

/// CNTK's ConfigParameters::ParseValue for one record `text[begin, end)`; returns where parsing goes on.
size_t parse_assignment(const SourceText& text, size_t begin, size_t end, Scope& scope) {
  const std::string& s = text.str();
  begin = s.find_first_not_of(kBlanks, begin);
  if (begin == kNpos || begin >= end) return end;

  size_t key_end = s.find_first_of("=[{(\"", begin);
  if (key_end == kNpos || key_end >= end) {
    // No '=' and no value bracket: a flag.
    std::string key = trimmed_string(std::string_view(s).substr(begin, end - begin));
    if (!key.empty()) {
      SourceText value;
      value.append("true", text.origin_at(begin));
      insert_value(scope, key, std::move(value));
    }
    return end;
  }

  std::string key = trimmed_string(std::string_view(s).substr(begin, key_end - begin));
  size_t value_begin = key_end + (s[key_end] == '=' ? 1 : 0);
  value_begin = s.find_first_not_of(kBlanks, value_begin);
  const std::string key_path = scope.path + "." + key;

  size_t closer = value_begin == kNpos ? kNpos : match_bracket(text, value_begin, key_path);
  SourceText value;
  if (closer != kNpos) {
    // A bracketed value runs to its closer even past the record end; quotes are removed, brackets kept.
    end = closer + 1;
    value = s[value_begin] == '"' ? text.slice(value_begin + 1, closer) : text.slice(value_begin, closer + 1);
  } else {
    if (value_begin == kNpos || value_begin >= end) {
      throw_at(text.origin_at(begin), "ParseValue: No value given for '" + key + "'.", key_path);
    }
    value = trimmed(text, value_begin, end);
  }
  if (!key.empty()) insert_value(scope, key, std::move(value));
  return end;
}

/// CNTK's ConfigArray::ParseValue for one record: a bracketed element is kept whole, otherwise
/// `value*count` repeats `value`.
size_t parse_array_element(const SourceText& text, size_t begin, size_t end, const std::string& key_path,
                           std::vector<SourceText>& elements) {
  const std::string& s = text.str();
  begin = s.find_first_not_of(kBlanks, begin);
  if (begin == kNpos || begin >= end) return end;

  size_t star = kNpos;
  if (match_bracket(text, begin, key_path) == kNpos) star = s.find('*', begin);
  if (star == kNpos || star >= end) {
    elements.push_back(trimmed(text, begin, end));
    return end;
  }

  SourceText value = trimmed(text, begin, star);
  std::string count_text = trimmed_string(std::string_view(s).substr(star + 1, end - star - 1));
  if (count_text.empty()) {
    throw_at(text.origin_at(star), "missing repeat count after '*' in array element", key_path);
  }
  // The count is converted like CNTK's int: strtol, whole string, must fit an int.
  errno = 0;
  char* stop = nullptr;
  long count = std::strtol(count_text.c_str(), &stop, 10);
  if (stop != count_text.c_str() + count_text.size() || errno == ERANGE || count < INT_MIN ||
      count > INT_MAX) {
    throw_at(text.origin_at(star + 1),
             "ConfigValue (int): invalid repeat count '" + count_text + "' (expected a base-10 integer)",
             key_path);
  }
  // CNTK would try to build an array of up to 2^31 elements; a bound turns a typo into a located error.
  constexpr long kMaxArrayElements = 1000000;
  if (count > kMaxArrayElements - static_cast<long>(elements.size())) {
    throw_at(text.origin_at(star + 1),
             "repeat count " + count_text + " makes the array longer than " +
                 std::to_string(kMaxArrayElements) + " elements",
             key_path);
  }
  for (long i = 0; i < count; ++i) elements.push_back(value);
  return end;
}

}  // namespace

bool KeyLess::operator()(std::string_view a, std::string_view b) const {
  auto lower = [](char c) {
    auto u = static_cast<unsigned char>(c);
    return static_cast<unsigned char>(u >= 'A' && u <= 'Z' ? u - 'A' + 'a' : u);
  };
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = lower(a[i]);
    unsigned char y = lower(b[i]);
    if (x != y) return x < y;
  }
  return a.size() < b.size();
}

void throw_at(const Origin& origin, const std::string& message, const std::string& key_path) {
  throw ConfigError(message, key_path, origin.known() ? *origin.file : std::string(), origin.line,
                    origin.column);
}

size_t match_bracket(const SourceText& text, size_t pos, const std::string& key_path) {
  const std::string& s = text.str();
  if (pos >= s.size()) return kNpos;
  size_t kind = kOpeners.find(s[pos]);
  if (kind == std::string_view::npos) return kNpos;

  struct Open {
    char closer;
    size_t at;
  };
  std::vector<Open> open{{kClosers[kind], pos}};
  size_t cur = pos;
  while (true) {
    // Inside quotes only the closing quote counts.
    cur = s.find_first_of(open.back().closer == '"' ? std::string_view("\"") : std::string_view("]})\"[{("),
                          cur + 1);
    if (cur == kNpos) break;
    char c = s[cur];
    if (c == open.back().closer) {
      open.pop_back();
      if (open.empty()) return cur;
    } else if (c != '"' && kClosers.find(c) != std::string_view::npos) {
      throw_at(text.origin_at(cur),
               std::string("unmatched bracket found in parameters: '") + c + "' where '" +
                   open.back().closer + "' is expected to close the '" + s[open.back().at] + "' at " +
                   location_text(text.origin_at(open.back().at)),
               key_path);
    } else {
      open.push_back(Open{kClosers[kOpeners.find(c)], cur});
    }
  }
  throw_at(text.origin_at(open.back().at),
           std::string("no closing ") + open.back().closer + " found in parameters", key_path);
}

void insert_value(Scope& scope, std::string_view key, SourceText value) {
  auto it = scope.entries.find(key);
  if (it == scope.entries.end()) {
    scope.entries.emplace(std::string(key), std::move(value));
  } else if (!it->second.empty() && !value.empty() && value[0] == '[') {
    it->second.append(" ", Origin{});
    it->second.append(value);
  } else {
    it->second = std::move(value);
  }
}

void parse_dictionary(const SourceText& text, Scope& scope) {
  split_records(text, ';', scope.path,
                [&](size_t begin, size_t end) { return parse_assignment(text, begin, end, scope); });
}

std::vector<SourceText> parse_array(const SourceText& text, const std::string& key_path) {
  std::vector<SourceText> elements;
  split_records(text, ':', key_path, [&](size_t begin, size_t end) {
    return parse_array_element(text, begin, end, key_path, elements);
  });
  return elements;
}

}  // namespace cntkio::config_detail
