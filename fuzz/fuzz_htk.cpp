// libFuzzer target: the HTK readers on hostile input. The first byte chooses what the rest is:
//   0: an MLF file: indexed (CNTK's state machine), then every line of every indexed utterance parsed as a
//      label line, with the 4-column format or a state list (the second byte chooses);
//   1: an SCP file: every line adjusted (prefix or "..." replacement) and parsed;
//   2: an HTK feature file (through a memfd, as the reader opens files by path): its header decoded and its
//      frames read, from the start, in the middle and at the end.
// Only cntkio::Error may escape; what the parsers return is checked against the bounds they promise.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/errors.hpp"
#include "formats/htk/htk_file.hpp"
#include "formats/htk/mlf.hpp"
#include "formats/htk/scp.hpp"

namespace {

using namespace cntkio;

[[noreturn]] void broken(const char* what) {
  __builtin_printf("invariant violated: %s\n", what);
  std::abort();
}

// The lines of `text` (LF ends a line; a CR before it stays, as the parsers must cope with it).
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

void fuzz_mlf(std::string_view text, bool with_states) {
  const htk::StateTable states = htk::StateTable::from_names(
      {"sil", "t", "n", "sil_s2", "sil_s3", "sil_s4", "t_s2", "t_s3", "t_s4", "n_s2", "n_s3", "n_s4"});
  std::vector<htk::MlfIndexEntry> entries;
  try {
    entries = htk::index_mlf(text, "fuzz.mlf", [](const std::string&) {});
  } catch (const Error&) {
    return;
  }
  uint64_t previous_end = 0;
  for (const htk::MlfIndexEntry& e : entries) {
    if (e.begin >= e.end || e.end > text.size() || e.begin < previous_end) broken("MLF entry out of order");
    if (e.frames == 0 || e.frames > htk::kMaxUtteranceFrames) broken("MLF entry frames out of range");
    previous_end = e.end;
    const std::string_view utterance = text.substr(e.begin, e.end - e.begin);
    uint64_t offset = e.begin;
    bool key_line = true;
    for (std::string_view line : lines_of(utterance)) {
      const uint64_t line_offset = offset;
      offset += line.size() + 1;
      if (key_line) {
        key_line = false;
        continue;
      }
      try {
        const htk::FrameRange r =
            htk::parse_label_line(line, line_offset, "fuzz.mlf", with_states ? &states : nullptr);
        if (with_states && r.class_id >= states.size()) broken("label class outside the state list");
      } catch (const Error&) {
      }
      try {
        uint64_t first = 0, end = 0;
        htk::parse_frame_times(line, line_offset, "fuzz.mlf", first, end);
      } catch (const Error&) {
      }
    }
  }
}

void fuzz_scp(std::string_view text) {
  const std::string_view prefix = text.size() > 0 && text[0] == 'p' ? "/data/prefix" : "";
  uint64_t number = 0;
  for (std::string_view line : lines_of(text)) {
    ++number;
    try {
      const std::string adjusted = htk::adjust_scp_line(line, prefix, htk::scp_directory("dir/list.scp"));
      const htk::ScpEntry entry = htk::parse_scp_line(adjusted, "dir/list.scp", number);
      if (entry.line != number) broken("SCP entry with another line number");
    } catch (const Error&) {
    }
  }
}

void read_some_frames(const htk::PositionedFile& file, const htk::HtkHeader& header, uint64_t first,
                      uint64_t count) {
  if (count == 0 || first >= header.num_frames) return;
  count = std::min<uint64_t>(count, header.num_frames - first);
  if (header.dim == 0 || count * header.dim > (1u << 20)) return;  // the reader's own bounds come first
  try {
    htk::check_frames_present(file, header, first, count);
  } catch (const Error&) {
    return;
  }
  std::vector<float> out(count * header.dim);
  try {
    htk::read_frames(file, header, first, count, out.data());
  } catch (const Error&) {
    return;
  }
  // Reading must write every value: the bytes are the file's (NaN and infinities are possible data).
  volatile float sink = 0;
  for (float v : out) sink = sink + (std::isnan(v) ? 0.0f : 1.0f);
}

void fuzz_features(const uint8_t* data, size_t size) {
  static const int fd = ::memfd_create("fuzz.htk", 0);
  if (fd < 0) broken("memfd_create failed");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) {
    broken("cannot write the memfd");
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    const htk::PositionedFile file(path);
    const htk::HtkHeader header = htk::read_header(file);
    if (header.compressed && (header.a.size() != header.dim || header.b.size() != header.dim)) {
      broken("compression vectors of another size than the frame");
    }
    read_some_frames(file, header, 0, 4);
    read_some_frames(file, header, header.num_frames / 2, 3);
    if (header.num_frames > 0) read_some_frames(file, header, header.num_frames - 1, 1);
  } catch (const Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  switch (data[0] % 3) {
    case 0:
      fuzz_mlf(text, data[1] & 1);
      break;
    case 1:
      fuzz_scp(text);
      break;
    default:
      fuzz_features(data + 2, size - 2);
      break;
  }
  return 0;
}
