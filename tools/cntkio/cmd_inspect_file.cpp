#include "cmd_inspect_file.hpp"

#include <algorithm>
#include <iomanip>

#include "cntkio/cbf.hpp"
#include "cntkio/errors.hpp"

namespace cntkio::cli {

void inspect_data_file(const std::string& path, std::ostream& out) {
  if (!detect_cbf_layout(path)) {
    throw UsageError(
        "'" + path +
        "' is not a CBF file (neither layout); to describe a CTF file give --config and --section "
        "of a reader that reads it.");
  }
  const CbfHeader h = read_cbf_header(path);
  out << "file " << path << ": " << to_string(h.layout) << ", " << h.file_size << " bytes";
  if (h.layout == CbfLayout::kCurrent) {
    out << ", version 1, header at byte " << h.header_offset << '\n';
  } else {
    out << ", version 1 (header first), chunk data from byte " << h.data_offset << '\n';
  }
  out << "streams (" << h.streams.size() << "):\n";
  for (size_t i = 0; i < h.streams.size(); ++i) {
    const CbfStreamHeader& s = h.streams[i];
    out << "  " << i << " " << s.name << ": " << to_string(s.storage) << ", dim " << s.dim << ", "
        << to_string(s.element_type) << '\n';
  }
  uint64_t empty = 0;
  uint64_t largest = 0;
  for (const CbfChunkHeader& c : h.chunks) {
    if (c.sequences == 0) ++empty;
    largest = std::max(largest, c.size);
  }
  out << "chunks: " << h.chunks.size() << ", sequences: " << h.total_sequences()
      << ", samples: " << h.total_samples() << ", largest chunk: " << largest << " bytes";
  if (empty > 0) out << ", " << empty << " empty chunk(s) (skipped when reading)";
  out << '\n';
  out << "  " << std::setw(6) << "chunk" << std::setw(14) << "offset" << std::setw(14) << "bytes"
      << std::setw(12) << "sequences" << std::setw(12) << "samples" << '\n';
  for (size_t i = 0; i < h.chunks.size(); ++i) {
    const CbfChunkHeader& c = h.chunks[i];
    out << "  " << std::setw(6) << i << std::setw(14) << c.offset << std::setw(14) << c.size << std::setw(12)
        << c.sequences << std::setw(12) << c.samples << '\n';
  }
}

}  // namespace cntkio::cli
