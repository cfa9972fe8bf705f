#include "formats/htk/scp.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <limits>

#include "cntkio/errors.hpp"
#include "core/input_file.hpp"

namespace cntkio::htk {
namespace {

SourceLocation at(const std::string& file, uint64_t line) {
  SourceLocation where;
  where.file = file;
  where.line = line;
  return where;
}

// C's strtol as atoi calls it: leading white space, an optional sign, digits; stops at the first other
// character; saturates at LONG_MIN and LONG_MAX.
long c_strtol(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  const unsigned long long cap = static_cast<unsigned long long>(LONG_MAX) + 1;
  unsigned long long magnitude = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const unsigned digit = static_cast<unsigned>(text[i] - '0');
    magnitude = magnitude > cap / 10 ? cap : std::min(cap, magnitude * 10 + digit);
  }
  long value;
  if (negative) {
    value = magnitude >= cap ? LONG_MIN : -static_cast<long>(magnitude);
  } else {
    value = magnitude >= cap ? LONG_MAX : static_cast<long>(magnitude);
  }
  return value;
}

// A frame number of an SCP range: `(int) atoi(text)` stored as uint32, as CNTK does. CNTK keeps only the low
// 32 bits of a number outside [-2^31, 2^32), which can name another frame of the file: cntkio refuses it. A
// number from -2^31 to -1 keeps CNTK's behaviour: as uint32 it is past any file's end, which is reported.
uint32_t frame_number(std::string_view text, std::string_view line, const std::string& scp_path,
                      uint64_t line_number) {
  const long value = c_strtol(text);
  if (value > static_cast<long>(std::numeric_limits<uint32_t>::max()) ||
      value < static_cast<long>(std::numeric_limits<int32_t>::min())) {
    throw FormatError("parsedpath: frame number " + std::to_string(value) + " does not fit in 32 bits in '" +
                          std::string(line) + "'",
                      at(scp_path, line_number));
  }
  return static_cast<uint32_t>(static_cast<unsigned long>(value));
}

}  // namespace

std::string scp_directory(std::string_view scp_path) {
  const size_t slash = scp_path.find_last_of("/\\");
  if (slash == std::string_view::npos || slash + 1 == scp_path.size()) return {};
  return std::string(scp_path.substr(0, slash));
}

std::string adjust_scp_line(std::string_view line, std::string_view prefix, std::string_view scp_dir) {
  std::string root(prefix);
  for (char& c : root) {
    if (c == '\\') c = '/';
  }
  while (!root.empty() && root.back() == '/') root.pop_back();
  if (!root.empty()) root.push_back('/');

  std::string out(line);
  if (!root.empty()) {
    const size_t eq = out.find('=');
    if (eq != std::string::npos) {
      out.insert(eq + 1, root);
    } else {
      out.insert(0, root);
    }
    return out;
  }
  const size_t dots = out.find("...");
  if (dots != std::string::npos) out.replace(dots, 3, scp_dir);
  return out;
}

ScpEntry parse_scp_line(std::string_view line, const std::string& scp_path, uint64_t line_number) {
  const std::string no_range =
      "parsedpath: this mode requires an input script with start and end frames given";
  auto malformed = [&] {
    return FormatError("parsedpath: malformed path '" + std::string(line) + "'", at(scp_path, line_number));
  };
  const size_t eq = line.find('=');
  if (eq == std::string_view::npos) throw FormatError(no_range, at(scp_path, line_number));
  const size_t open = line.find('[', eq + 1);
  if (open == std::string_view::npos) throw FormatError(no_range, at(scp_path, line_number));
  const size_t comma = line.find(',', open + 1);
  if (comma == std::string_view::npos) throw malformed();
  const size_t close = line.find(']', comma + 1);
  std::string_view end_text =
      line.substr(comma + 1, close == std::string_view::npos ? std::string_view::npos : close - comma - 1);
  // Anything after ']' but a CR is an error; a missing ']' is accepted (CNTK quirk).
  if (close != std::string_view::npos && close + 1 < line.size() && line[close + 1] != '\r')
    throw malformed();

  ScpEntry entry;
  entry.line = line_number;
  const std::string_view logical = line.substr(0, eq);
  const size_t dot = logical.find_last_of('.');
  entry.key = std::string(dot == std::string_view::npos ? logical : logical.substr(0, dot));
  entry.physical = std::string(line.substr(eq + 1, open - eq - 1));
  if (const size_t nul = entry.physical.find('\0'); nul != std::string::npos) {
    throw FormatError("the file name '" + entry.physical.substr(0, nul) + "\\0" +
                          entry.physical.substr(nul + 1) + "' holds a NUL byte; a path cannot contain one",
                      at(scp_path, line_number));
  }
  entry.first = frame_number(line.substr(open + 1, comma - open - 1), line, scp_path, line_number);
  entry.last = frame_number(end_text, line, scp_path, line_number);
  if (entry.first > entry.last) {
    throw FormatError("open: start frame " + std::to_string(static_cast<int32_t>(entry.first)) +
                          " > end frame " + std::to_string(static_cast<int32_t>(entry.last)) + " in '" +
                          entry.physical + "'",
                      at(scp_path, line_number));
  }
  return entry;
}

std::vector<ScpEntry> read_scp_file(const std::string& scp_path, std::string_view prefix_path) {
  const std::string text = core::read_input_file(scp_path, "Failed to open input file");
  const std::string dir = scp_directory(scp_path);
  std::vector<ScpEntry> entries;
  uint64_t number = 0;
  // Lines as std::getline gives them (CNTK): a final line feed ends the last line, it does not begin another.
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    ++number;
    const std::string_view line(text.data() + begin, end - begin);
    entries.push_back(parse_scp_line(adjust_scp_line(line, prefix_path, dir), scp_path, number));
    begin = end + 1;
  }
  return entries;
}

}  // namespace cntkio::htk
