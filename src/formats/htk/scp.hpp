// SCP ("script") files of HTK feature streams: `logical=physical[start,end]` lines (spec htk.md §3).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cntkio::htk {

/// One SCP line, parsed.
struct ScpEntry {
  std::string key;       ///< logical name cut at its last '.'
  std::string physical;  ///< feature file path (after prefixPathInSCP / `...` adjustment)
  uint32_t first = 0;    ///< first frame (inclusive)
  uint32_t last = 0;     ///< last frame (inclusive)
  uint64_t line = 0;     ///< 1-based line number in the SCP file
};

/// CNTK's AdjustUtterancePath: inserts `prefix` (prefixPathInSCP) after the first '=' (or before the line),
/// or, without a prefix, replaces the first "..." with the SCP file's directory.
std::string adjust_scp_line(std::string_view line, std::string_view prefix, std::string_view scp_dir);

/// The directory part of an SCP path as CNTK computes it (up to the last '/' or '\'; "" if none or if the
/// path ends with one).
std::string scp_directory(std::string_view scp_path);

/// Parses one adjusted SCP line with CNTK's rules. Throws FormatError (file `scp_path`, line `line_number`)
/// with CNTK's texts: "parsedpath: this mode requires an input script with start and end frames given" for
/// a line without a range, "parsedpath: malformed path '<line>'" for a bad range.
ScpEntry parse_scp_line(std::string_view line, const std::string& scp_path, uint64_t line_number);

/// Reads and parses every line of `scp_path` (blank lines are errors, as in CNTK). Throws IoError
/// ("Failed to open input file"; also for a directory, FIFO or device) and FormatError.
std::vector<ScpEntry> read_scp_file(const std::string& scp_path, std::string_view prefix_path);

}  // namespace cntkio::htk
