// HTK Master Label Files: state lists, the utterance index and label lines (spec htk.md §9).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cntkio::htk {

/// A state list (labelMappingFile): each non-empty line, verbatim, names the class of its 0-based position.
class StateTable {
 public:
  /// Reads `path`. Lines end at CR or LF; empty lines are skipped. Throws IoError, FormatError (duplicate
  /// names, empty list) with CNTK's texts.
  static StateTable read(const std::string& path);
  /// Builds a table from names in order (tests).
  static StateTable from_names(const std::vector<std::string>& names, const std::string& path = "<names>");

  bool find(std::string_view name, uint32_t& id) const;
  size_t size() const { return names_.size(); }
  bool empty() const { return names_.empty(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> ids_;  // looked up without copying
};

/// The most frames an MLF utterance may cover: 2^22, 11 h 39 min of 10 ms frames (CNTK has no limit). A label
/// line of a few bytes could otherwise claim billions of frames, which become the length of a label sequence
/// before anything can compare them with the features (a label deserializer never learns their length).
constexpr uint64_t kMaxUtteranceFrames = 1ull << 22;

/// One label line: frames [first, first + count) carry class `class_id`.
struct FrameRange {
  uint32_t first = 0;
  uint32_t count = 0;
  uint16_t class_id = 0;
};

/// Parses the start and end tokens of a label line and converts them to frames with CNTK's heuristic
/// (100 ns units if end - start >= 99999, frame numbers otherwise). `offset` is the line's byte offset
/// in `file`. Throws FormatError with CNTK's "Offset '<b>': ..." texts.
void parse_frame_times(std::string_view line, uint64_t offset, const std::string& file, uint64_t& first_frame,
                       uint64_t& end_frame);

/// Parses a whole label line (times and class). `states` null: 4-column format, the class is the integer
/// in the 4th token. Throws FormatError with CNTK's texts.
FrameRange parse_label_line(std::string_view line, uint64_t offset, const std::string& file,
                            const StateTable* states);

/// CNTK's MLF key from a key line: right-trimmed, quotes required, leading "*/" and the last ".ext"
/// removed. False if the line is malformed (shorter than 3 characters or not quoted).
bool parse_mlf_key(std::string_view line, std::string& key);

/// One indexed utterance of an MLF file.
struct MlfIndexEntry {
  std::string key;
  uint64_t begin = 0;     ///< byte offset of the key line
  uint64_t end = 0;       ///< byte offset just after the "." line
  uint64_t frames = 0;    ///< end frame of the last label line
  uint64_t key_line = 0;  ///< 1-based line number of the key line
};

/// Indexes MLF text with CNTK's state machine (header, key, label lines, "."). Utterances with a malformed
/// key or no label lines, and an utterance the text ends in (no "." line), are skipped through `warn`.
/// Throws FormatError ("Expected MLF header was not found.", "Input file is empty", time parse errors of last
/// label lines, 0-frame utterances, utterances whose last label line ends past kMaxUtteranceFrames).
std::vector<MlfIndexEntry> index_mlf(std::string_view text, const std::string& file,
                                     const std::function<void(const std::string&)>& warn);

}  // namespace cntkio::htk
