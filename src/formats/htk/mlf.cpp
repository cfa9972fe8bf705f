#include "formats/htk/mlf.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "cntkio/errors.hpp"
#include "core/input_file.hpp"

namespace cntkio::htk {
namespace {

SourceLocation at_offset(const std::string& file, uint64_t offset) {
  SourceLocation where;
  where.file = file;
  where.byte_offset = offset;
  return where;
}

std::string offset_prefix(uint64_t offset) {
  return "Offset '" + std::to_string(offset) + "': ";
}

// Tokens split on single blanks only: consecutive blanks give empty tokens, tabs are ordinary characters.
std::vector<std::string_view> split_blanks(std::string_view line) {
  std::vector<std::string_view> tokens;
  size_t start = 0;
  while (true) {
    const size_t blank = line.find(' ', start);
    if (blank == std::string_view::npos) {
      tokens.push_back(line.substr(start));
      return tokens;
    }
    tokens.push_back(line.substr(start, blank - start));
    start = blank + 1;
  }
}

// Boost.Spirit `double_` as a prefix parse: the number must begin at the first character (an optional sign
// first); whatever follows it in the token is ignored.
bool parse_double_prefix(std::string_view token, double& value) {
  size_t i = 0;
  bool negative = false;
  if (i < token.size() && (token[i] == '+' || token[i] == '-')) negative = token[i++] == '-';
  if (i >= token.size() || token[i] == '+' || token[i] == '-') return false;
  double v = 0;
  auto [ptr, ec] =
      std::from_chars(token.data() + i, token.data() + token.size(), v, std::chars_format::general);
  if (ec == std::errc::invalid_argument) return false;
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves v unchanged on range errors; Spirit saturates like strtod.
    v = std::strtod(std::string(token.substr(i, static_cast<size_t>(ptr - token.data()) - i)).c_str(),
                    nullptr);
  }
  value = negative ? -v : v;
  return true;
}

// Boost.Spirit `int_` as a prefix parse (optional sign, digits; a value outside int32 fails).
bool parse_int_prefix(std::string_view token, int64_t& value) {
  size_t i = 0;
  bool negative = false;
  if (i < token.size() && (token[i] == '+' || token[i] == '-')) negative = token[i++] == '-';
  const size_t digits = i;
  int64_t v = 0;
  for (; i < token.size() && token[i] >= '0' && token[i] <= '9'; ++i) {
    v = v * 10 + (token[i] - '0');
    if (v > 2147483648LL) return false;
  }
  if (i == digits) return false;
  v = negative ? -v : v;
  if (v > 2147483647LL) return false;
  value = v;
  return true;
}

// size_t(x) for the values CNTK can represent; false for negative, NaN or too large values.
bool to_frame(double x, uint64_t& frame) {
  if (!(x >= 0.0) || x >= 18446744073709551616.0) return false;
  frame = static_cast<uint64_t>(x);
  return true;
}

}  // namespace

StateTable StateTable::read(const std::string& path) {
  const std::string content = core::read_input_file(path, "error opening file");
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= content.size()) {
    size_t end = content.find_first_of("\r\n", start);
    if (end == std::string::npos) end = content.size();
    if (end > start) names.emplace_back(content, start, end - start);
    start = end + 1;
  }
  return from_names(names, path);
}

StateTable StateTable::from_names(const std::vector<std::string>& names, const std::string& path) {
  StateTable table;
  for (const std::string& name : names) {
    if (!table.ids_.emplace(name, static_cast<uint32_t>(table.names_.size())).second) {
      SourceLocation where;
      where.file = path;
      where.line = table.names_.size() + 1;  // counting non-empty lines
      throw FormatError(
          "Deduplicate two states with the same name '" + name + "' from the state table '" + path + "'.",
          where);
    }
    table.names_.push_back(name);
  }
  if (table.names_.empty()) {
    SourceLocation where;
    where.file = path;
    throw FormatError("State list table '" + path + "' is not allowed to be empty.", where);
  }
  return table;
}

bool StateTable::find(std::string_view name, uint32_t& id) const {
  auto it = ids_.find(name);
  if (it == ids_.end()) return false;
  id = it->second;
  return true;
}

void parse_frame_times(std::string_view line, uint64_t offset, const std::string& file, uint64_t& first_frame,
                       uint64_t& end_frame) {
  const std::vector<std::string_view> tokens = split_blanks(line);
  const SourceLocation where = at_offset(file, offset);
  if (tokens.size() < 2) {
    throw FormatError(offset_prefix(offset) + "do not support frame range format with less than two columns.",
                      where);
  }
  double start = 0, end = 0;
  if (!parse_double_prefix(tokens[0], start)) {
    throw FormatError(offset_prefix(offset) + "cannot parse start frame of range.", where);
  }
  if (!parse_double_prefix(tokens[1], end)) {
    throw FormatError(offset_prefix(offset) + "cannot parse end frame of range.", where);
  }
  // CNTK's heuristic: a segment of at least 99999 units is in 100 ns units, anything shorter in frames.
  bool ok;
  if (end - start >= 99999) {
    ok = to_frame(start / 100000 + 0.5, first_frame) && to_frame(end / 100000 + 0.5, end_frame);
  } else {
    ok = to_frame(start, first_frame) && to_frame(end, end_frame);
  }
  if (!ok) {
    throw FormatError(offset_prefix(offset) +
                          "not enough bits for the frame range (a start or end time is negative "
                          "or too large).",
                      where);
  }
}

FrameRange parse_label_line(std::string_view line, uint64_t offset, const std::string& file,
                            const StateTable* states) {
  uint64_t first = 0, end = 0;
  parse_frame_times(line, offset, file, first, end);
  const std::vector<std::string_view> tokens = split_blanks(line);
  const SourceLocation where = at_offset(file, offset);
  int64_t class_id = 0;
  if (states != nullptr) {
    if (tokens.size() < 3) {
      // CNTK reads past the token list here (undefined behaviour).
      throw FormatError(offset_prefix(offset) + "the label line has no state name (third column).", where);
    }
    uint32_t id = 0;
    if (!states->find(tokens[2], id)) {
      throw FormatError(offset_prefix(offset) + "frame range state '" + std::string(tokens[2]) +
                            "' is not found in the statelist",
                        where);
    }
    class_id = id;
  } else {
    if (tokens.size() != 4) {
      throw FormatError(
          offset_prefix(offset) + "CNTK supports 4-column format frame range or state list table.", where);
    }
    if (!parse_int_prefix(tokens[3], class_id)) {
      throw FormatError(offset_prefix(offset) + "cannot parse class id of the frame range", where);
    }
  }
  if (end < first) {
    throw FormatError(offset_prefix(offset) + "frame range end time is earlier than start time.", where);
  }
  if (first > 0xFFFFFFFFull || end - first > 0xFFFFFFFFull || class_id < 0 || class_id > 0xFFFF) {
    throw FormatError(
        offset_prefix(offset) + "not enough bits for the frame range start, length or class id.", where);
  }
  return FrameRange{static_cast<uint32_t>(first), static_cast<uint32_t>(end - first),
                    static_cast<uint16_t>(class_id)};
}

bool parse_mlf_key(std::string_view line, std::string& key) {
  size_t n = line.size();
  while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r')) --n;
  line = line.substr(0, n);
  if (line.size() < 3 || line.front() != '"' || line.back() != '"') return false;
  std::string_view inner = line.substr(1, line.size() - 2);
  if (inner.size() > 2 && inner.substr(0, 2) == "*/") inner.remove_prefix(2);
  const size_t dot = inner.find_last_of('.');
  key = std::string(dot == std::string_view::npos ? inner : inner.substr(0, dot));
  return true;
}

std::vector<MlfIndexEntry> index_mlf(std::string_view text, const std::string& file,
                                     const std::function<void(const std::string&)>& warn) {
  if (text.empty()) throw FormatError("Input file is empty", at_offset(file, 0));
  enum class State { kHeader, kKey, kFrames } state = State::kHeader;
  std::vector<MlfIndexEntry> entries;
  MlfIndexEntry current;
  bool key_ok = false;
  std::string_view last_label;
  uint64_t last_label_offset = 0;
  uint64_t last_label_line = 0;
  uint64_t line_number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t line_begin = pos;
    size_t newline = text.find('\n', pos);
    const size_t line_end = newline == std::string_view::npos ? text.size() : newline;
    pos = newline == std::string_view::npos ? text.size() : newline + 1;
    ++line_number;
    std::string_view line = text.substr(line_begin, line_end - line_begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    switch (state) {
      case State::kHeader:
        if (line != "#!MLF!#")
          throw FormatError("Expected MLF header was not found.", at_offset(file, line_begin));
        state = State::kKey;
        break;
      case State::kKey:
        if (line == "#!MLF!#") break;  // concatenated MLF files
        current = MlfIndexEntry{};
        current.begin = line_begin;
        current.key_line = line_number;
        key_ok = parse_mlf_key(line, current.key);
        if (!key_ok) current.key = std::string(line);
        last_label = {};
        state = State::kFrames;
        break;
      case State::kFrames:
        if (line != ".") {
          last_label = line;
          last_label_offset = line_begin;
          last_label_line = line_number;
          break;
        }
        current.end = pos;
        state = State::kKey;
        if (!key_ok || last_label.empty()) {
          warn("WARNING: Cannot parse the utterance '" + current.key + "' at offset (" +
               std::to_string(current.begin) + ")");
          break;
        }
        {
          uint64_t first = 0;
          parse_frame_times(last_label, last_label_offset, file, first, current.frames);
        }
        if (current.frames == 0) {
          SourceLocation where = at_offset(file, current.begin);
          where.line = current.key_line;
          where.sequence_key = current.key;
          throw FormatError("Invalid sequence: number of samples == 0", where);
        }
        if (current.frames > kMaxUtteranceFrames) {
          SourceLocation where = at_offset(file, last_label_offset);
          where.line = last_label_line;
          where.sequence_key = current.key;
          throw FormatError("MLF utterance '" + current.key + "' ends at frame " +
                                std::to_string(current.frames) + ", past the " +
                                std::to_string(kMaxUtteranceFrames) +
                                " frames (11 h 39 min of 10 ms frames) an utterance may cover.",
                            where);
        }
        entries.push_back(std::move(current));
        break;
    }
  }
  if (state == State::kFrames) {
    // CNTK drops this utterance without a word (a file cut short, a missing "." line).
    SourceLocation where = at_offset(file, current.begin);
    where.line = current.key_line;
    warn("WARNING: the MLF file ends inside the utterance '" + current.key +
         "' (no '.' line after it); it is left out " + where.describe());
  }
  return entries;
}

}  // namespace cntkio::htk
