// Header parsing and validation of both CBF layouts (spec cbf.md §1.1 and §3.1).
#include <algorithm>
#include <string>

#include "cntkio/cbf.hpp"
#include "cntkio/errors.hpp"
#include "core/mapped_file.hpp"
#include "formats/cbf/cbf_format.hpp"

namespace cntkio {
namespace cbf {
namespace {

std::string str(uint64_t v) {
  return std::to_string(v);
}
std::string str_signed(int64_t v) {
  return std::to_string(v);
}

std::string quoted(const std::string& name) {
  return "'" + name + "'";
}

// Smallest number of bytes one sequence can occupy in a current-layout chunk body: its length prefix plus
// the count fields of every input.
uint64_t min_sequence_bytes(const std::vector<CbfStreamHeader>& streams) {
  uint64_t n = 4;
  for (const CbfStreamHeader& s : streams) n += s.storage == StorageFormat::kDense ? 4 : 8;
  return n;
}

// Smallest number of bytes one sample of some input takes in a current-layout record: a dense sample's
// values, or a sparse sample's nnz count.
uint64_t min_sample_bytes(const std::vector<CbfStreamHeader>& streams) {
  uint64_t n = UINT64_MAX;
  for (const CbfStreamHeader& s : streams) {
    n = std::min(n, s.storage == StorageFormat::kDense ? s.dim * element_size(s.element_type) : 4);
  }
  return n;
}

// A row that claims samples without sequences: the samples could only be bytes no row describes.
void check_empty_row(const std::string& file, uint64_t index, const CbfChunkHeader& chunk) {
  if (chunk.sequences == 0 && chunk.samples > 0) {
    fail(file, chunk.row_offset,
         "Chunk " + str(index) + " declares 0 sequences but " + str(chunk.samples) +
             " samples (chunk table row at byte offset " + str(chunk.row_offset) +
             "); a chunk without sequences holds no samples.");
  }
}

CbfHeader parse_current(const std::string& file, std::string_view data) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  const uint64_t size = data.size();
  CbfHeader header;
  header.layout = CbfLayout::kCurrent;
  header.file_size = size;
  header.data_offset = kPrefixSize;

  Cursor prefix(file, bytes, size, 0, "the end of the file (size " + str(size) + ")");
  prefix.u64("the magic number");
  const uint32_t version = prefix.u32("the format version");
  if (version != kVersion) {
    fail(file, 8, "Unsupported CNTK binary format version " + str(version) + " (cntkio reads version 1).");
  }
  if (size < kPrefixSize + kTrailerSize) {
    fail(
        file, size,
        "The file is " + str(size) +
            " bytes long, too short for a CNTK binary format file (a 12-byte prefix and an 8-byte trailer at "
            "least).");
  }
  const uint64_t trailer = size - kTrailerSize;
  int64_t stored_offset;
  std::memcpy(&stored_offset, bytes + trailer, sizeof stored_offset);
  if (stored_offset < static_cast<int64_t>(kPrefixSize) || static_cast<uint64_t>(stored_offset) > trailer) {
    fail(file, trailer,
         "The header offset " + str_signed(stored_offset) +
             " stored in the trailer is outside the file (size " + str(size) +
             "; the header must lie between byte 12 and the trailer at byte " + str(trailer) + ").");
  }
  const auto header_offset = static_cast<uint64_t>(stored_offset);
  header.header_offset = header_offset;
  Cursor c(file, bytes + header_offset, trailer - header_offset, header_offset,
           "the trailer at byte offset " + str(trailer));
  if (c.u64("the header's magic number") != kCbfMagic) {
    fail(file, header_offset,
         "The header at byte offset " + str(header_offset) +
             " (from the trailer) does not start with the CBF magic number; the file is truncated or "
             "corrupt.");
  }
  const uint32_t num_chunks = c.u32("the number of chunks");
  const uint64_t inputs_at = c.offset();
  const uint32_t num_inputs = c.u32("the number of inputs");
  if (num_inputs == 0) c.error_at(inputs_at, "The header declares no input stream.");
  constexpr uint64_t kMinDescriptor = 1 + 4 + 1 + 4;
  if (num_inputs > c.remaining() / kMinDescriptor) {
    c.error_at(inputs_at, "The header declares " + str(num_inputs) +
                              " inputs; their descriptors need at least " +
                              str(uint64_t{num_inputs} * kMinDescriptor) + " bytes but only " +
                              str(c.remaining()) + " remain before the trailer.");
  }
  for (uint32_t i = 0; i < num_inputs; ++i) {
    CbfStreamHeader s;
    const uint64_t at = c.offset();
    const uint8_t encoding = c.u8("an input's encoding");
    if (encoding > 1) {
      c.error_at(at, "Unknown encoding type " + str(encoding) + " of input " + str(i) +
                         " (expected 0 = dense or 1 = sparse).");
    }
    s.storage = encoding == 0 ? StorageFormat::kDense : StorageFormat::kSparseCsc;
    const uint32_t name_length = c.u32("an input's name length");
    const unsigned char* name = c.take(name_length, "an input's name");
    s.name.assign(reinterpret_cast<const char*>(name), name_length);
    const uint64_t type_at = c.offset();
    s.type_offset = type_at;
    const uint8_t type = c.u8("an input's element type");
    if (type > 1) {
      c.error_at(type_at, "Unknown element type " + str(type) + " of input " + quoted(s.name) +
                              " (expected 0 = float or 1 = double).");
    }
    s.element_type = type == 0 ? ElementType::kFloat : ElementType::kDouble;
    const uint64_t dim_at = c.offset();
    s.dim = c.u32("an input's sample dimension");
    if (s.dim == 0) c.error_at(dim_at, "Input " + quoted(s.name) + " has sample dimension 0.");
    if (s.storage == StorageFormat::kSparseCsc && s.dim > kMaxSparseDim) {
      c.error_at(dim_at, "Sparse input " + quoted(s.name) + " has sample dimension " + str(s.dim) +
                             ", above the maximum 2147483647.");
    }
    header.streams.push_back(std::move(s));
  }
  if (num_chunks > c.remaining() / kChunkRowSize) {
    c.error_at(inputs_at - 4, "The header declares " + str(num_chunks) + " chunks; the chunk table needs " +
                                  str(uint64_t{num_chunks} * kChunkRowSize) + " bytes but only " +
                                  str(c.remaining()) + " remain before the trailer.");
  }
  std::vector<uint64_t> row_offsets;
  header.chunks.reserve(num_chunks);
  row_offsets.reserve(num_chunks);
  for (uint32_t i = 0; i < num_chunks; ++i) {
    row_offsets.push_back(c.offset());
    const int64_t offset = c.i64("a chunk offset");
    CbfChunkHeader chunk;
    chunk.row_offset = row_offsets.back();
    chunk.sequences = c.u32("a chunk's number of sequences");
    chunk.samples = c.u32("a chunk's number of samples");
    if (offset < static_cast<int64_t>(kPrefixSize)) {
      fail(file, row_offsets.back(),
           "Chunk " + str(i) + " offset " + str_signed(offset) +
               " lies before the end of the 12-byte file prefix.");
    }
    if (static_cast<uint64_t>(offset) > header_offset) {
      fail(file, row_offsets.back(),
           "Chunk " + str(i) + " offset " + str_signed(offset) +
               " beyond the end of the chunk data (the header " + "starts at byte " + str(header_offset) +
               ", file size " + str(size) + ").");
    }
    chunk.offset = static_cast<uint64_t>(offset);
    if (i > 0 && chunk.offset < header.chunks.back().offset) {
      fail(file, row_offsets.back(),
           "Chunk " + str(i) + " offset " + str(chunk.offset) + " is smaller than chunk " + str(i - 1) +
               " offset " + str(header.chunks.back().offset) + "; chunks must be stored in table order.");
    }
    header.chunks.push_back(chunk);
  }
  // Every count of a row against the others and against the bytes of its chunk, before anything uses them.
  const uint64_t per_sequence = min_sequence_bytes(header.streams);
  const uint64_t per_sample = min_sample_bytes(header.streams);
  for (uint32_t i = 0; i < num_chunks; ++i) {
    CbfChunkHeader& chunk = header.chunks[i];
    const uint64_t end = i + 1 < num_chunks ? header.chunks[i + 1].offset : header_offset;
    chunk.size = end - chunk.offset;
    check_empty_row(file, i, chunk);
    if (chunk.sequences == 0 && chunk.size > 0) {
      fail(file, row_offsets[i],
           "Chunk " + str(i) + " declares 0 sequences but holds " + str(chunk.size) + " bytes (offset " +
               str(chunk.offset) + " to " + str(end) +
               "); no row of the chunk table describes them (chunk table row at byte offset " +
               str(row_offsets[i]) + ").");
    }
    if (chunk.sequences > chunk.size / per_sequence) {
      fail(file, row_offsets[i],
           "Chunk " + str(i) + " declares " + str(chunk.sequences) + " sequences, which need at least " +
               str(chunk.sequences * per_sequence) + " bytes, but it has only " + str(chunk.size) +
               " bytes (offset " + str(chunk.offset) + " to " + str(end) + ").");
    }
    // A sequence's length is at most the samples of its longest input, each of which takes bytes.
    const uint64_t most_samples = (chunk.size - chunk.sequences * per_sequence) / per_sample;
    if (chunk.samples > most_samples) {
      fail(file, row_offsets[i],
           "Chunk " + str(i) + " declares " + str(chunk.samples) + " samples in " + str(chunk.sequences) +
               " sequences, but its " + str(chunk.size) + " bytes (offset " + str(chunk.offset) + " to " +
               str(end) + ") hold at most " + str(most_samples) + " (chunk table row at byte offset " +
               str(row_offsets[i]) + ").");
    }
  }
  return header;
}

// Legacy v1 (header first). All integers signed; see spec cbf.md §3.1.
CbfHeader parse_legacy(const std::string& file, std::string_view data) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  const uint64_t size = data.size();
  CbfHeader header;
  header.layout = CbfLayout::kLegacyV1;
  header.file_size = size;
  Cursor c(file, bytes, size, 0, "the end of the file (size " + str(size) + ")");
  c.i64("the version");
  const uint64_t chunks_at = c.offset();
  const int64_t num_chunks = c.i64("the number of chunks");
  if (num_chunks < 0) c.error_at(chunks_at, "Negative number of chunks " + str_signed(num_chunks) + ".");
  const uint64_t inputs_at = c.offset();
  const int32_t num_inputs = c.i32("the number of inputs");
  if (num_inputs <= 0) {
    c.error_at(inputs_at,
               "The header declares " + str_signed(num_inputs) + " inputs; at least one is needed.");
  }
  constexpr uint64_t kMinDescriptor = 4 * 4;
  if (static_cast<uint64_t>(num_inputs) > c.remaining() / kMinDescriptor) {
    c.error_at(inputs_at, "The header declares " + str_signed(num_inputs) +
                              " inputs; their headers need at least " +
                              str(static_cast<uint64_t>(num_inputs) * kMinDescriptor) + " bytes but only " +
                              str(c.remaining()) + " remain in the file.");
  }
  auto read_type = [&c](CbfStreamHeader& s) {
    const std::string& name = s.name;
    const uint64_t at = c.offset();
    s.type_offset = at;
    const int32_t type = c.i32("an input's element type");
    if (type != 0 && type != 1) {
      c.error_at(at, "Unknown element type " + str_signed(type) + " of input " + quoted(name) +
                         " (expected 0 = float or 1 = double).");
    }
    return type == 0 ? ElementType::kFloat : ElementType::kDouble;
  };
  for (int32_t i = 0; i < num_inputs; ++i) {
    CbfStreamHeader s;
    const uint64_t name_at = c.offset();
    const int32_t name_length = c.i32("an input's name length");
    if (name_length < 0) c.error_at(name_at, "Negative name length " + str_signed(name_length) + ".");
    const unsigned char* name = c.take(static_cast<uint64_t>(name_length), "an input's name");
    s.name.assign(reinterpret_cast<const char*>(name), static_cast<size_t>(name_length));
    const uint64_t kind_at = c.offset();
    const int32_t kind = c.i32("an input's deserializer type");
    if (kind != 0 && kind != 1) {
      c.error_at(kind_at, "Unknown deserializer type " + str_signed(kind) + " of input " + quoted(s.name) +
                              " (expected 0 = dense or 1 = sparse).");
    }
    if (kind == 0) {
      s.storage = StorageFormat::kDense;
      s.element_type = read_type(s);
    } else {
      s.storage = StorageFormat::kSparseCsc;
      const uint64_t storage_at = c.offset();
      const int32_t storage = c.i32("an input's storage type");
      if (storage != 0) {
        c.error_at(storage_at, "Unsupported storage type " + str_signed(storage) + " of sparse input " +
                                   quoted(s.name) + " (only 0 = CSC exists).");
      }
      s.element_type = read_type(s);
      const uint64_t sequence_at = c.offset();
      const int32_t is_sequence = c.i32("an input's isSequence flag");
      if (is_sequence != 0 && is_sequence != 1) {
        c.error_at(sequence_at, "Invalid isSequence flag " + str_signed(is_sequence) + " of input " +
                                    quoted(s.name) + ".");
      }
    }
    const uint64_t dim_at = c.offset();
    const int32_t dim = c.i32("an input's sample dimension");
    if (dim <= 0) {
      c.error_at(dim_at, "Input " + quoted(s.name) + " has sample dimension " + str_signed(dim) +
                             "; it must be positive.");
    }
    s.dim = static_cast<uint64_t>(dim);
    header.streams.push_back(std::move(s));
  }
  if (static_cast<uint64_t>(num_chunks) > c.remaining() / kChunkRowSize) {
    c.error_at(chunks_at, "The header declares " + str_signed(num_chunks) +
                              " chunks; the offsets table needs 16 bytes per chunk but only " +
                              str(c.remaining()) + " remain in the file.");
  }
  bool any_sparse = false;
  for (const CbfStreamHeader& s : header.streams)
    any_sparse = any_sparse || s.storage != StorageFormat::kDense;
  std::vector<uint64_t> row_offsets;
  header.chunks.reserve(static_cast<size_t>(num_chunks));
  for (int64_t i = 0; i < num_chunks; ++i) {
    row_offsets.push_back(c.offset());
    const int64_t offset = c.i64("a chunk offset");
    const int32_t sequences = c.i32("a chunk's number of sequences");
    const int32_t samples = c.i32("a chunk's number of samples");
    if (offset < 0) {
      c.error_at(row_offsets.back(),
                 "Chunk " + str_signed(i) + " has a negative offset " + str_signed(offset) + ".");
    }
    if (sequences < 0 || samples < 0) {
      c.error_at(row_offsets.back(), "Chunk " + str_signed(i) + " has a negative count (" +
                                         str_signed(sequences) + " sequences, " + str_signed(samples) +
                                         " samples).");
    }
    CbfChunkHeader chunk;
    chunk.offset = static_cast<uint64_t>(offset);  // relative for now
    chunk.sequences = static_cast<uint32_t>(sequences);
    chunk.samples = static_cast<uint32_t>(samples);
    chunk.row_offset = row_offsets.back();
    check_empty_row(file, static_cast<uint64_t>(i), chunk);
    // Every legacy sequence has at least one sample, and exactly one when no input is sparse.
    if (chunk.samples < chunk.sequences || (!any_sparse && chunk.samples != chunk.sequences)) {
      c.error_at(
          row_offsets.back(),
          "Chunk " + str_signed(i) + " declares " + str(chunk.samples) + " samples for " +
              str(chunk.sequences) + " sequences (chunk table row at byte offset " + str(row_offsets.back()) +
              "), but every sequence of this file has " +
              (any_sparse ? "at least one sample." : "exactly one sample (all its inputs are dense)."));
    }
    header.chunks.push_back(chunk);
  }
  header.data_offset = c.offset();
  const uint64_t data_bytes = size - header.data_offset;
  for (size_t i = 0; i < header.chunks.size(); ++i) {
    CbfChunkHeader& chunk = header.chunks[i];
    if (chunk.offset > data_bytes) {
      fail(file, row_offsets[i],
           "Chunk " + str(i) + " offset " + str(header.data_offset + chunk.offset) +
               " beyond end of file (size " + str(size) + "; offset " + str(chunk.offset) +
               " relative to the data start " + str(header.data_offset) + ").");
    }
    if (i > 0 && chunk.offset < header.chunks[i - 1].offset - header.data_offset) {
      fail(file, row_offsets[i],
           "Chunk " + str(i) + " offset " + str(chunk.offset) + " is smaller than chunk " + str(i - 1) +
               "'s; chunks must be stored in table order.");
    }
    chunk.offset += header.data_offset;  // absolute from here on
  }
  for (size_t i = 0; i < header.chunks.size(); ++i) {
    CbfChunkHeader& chunk = header.chunks[i];
    const uint64_t end = i + 1 < header.chunks.size() ? header.chunks[i + 1].offset : size;
    chunk.size = end - chunk.offset;
    // Smallest body: every dense value of every sequence, and each sparse block's nnz and column starts.
    uint64_t needed = 0;
    bool too_big = false;
    const uint64_t n = chunk.sequences;
    for (const CbfStreamHeader& s : header.streams) {
      uint64_t part;
      if (s.storage == StorageFormat::kDense) {
        const uint64_t per_sequence = s.dim * element_size(s.element_type);
        too_big = too_big || (n > 0 && per_sequence > chunk.size / n);
        part = too_big ? 0 : n * per_sequence;
      } else {
        part = 4 + 4 * (n + 1);
      }
      needed += part;
      too_big = too_big || needed > chunk.size;
    }
    if (too_big) {
      fail(file, row_offsets[i],
           "Chunk " + str(i) + " declares " + str(n) + " sequences, more than its " + str(chunk.size) +
               " bytes (offset " + str(chunk.offset) + " to " + str(end) + ") can hold.");
    }
  }
  return header;
}

}  // namespace

void Cursor::truncated(uint64_t n, const char* what) const {
  fail(file_, offset(),
       std::string("Unexpected end of data reading ") + what + " at byte offset " + std::to_string(offset()) +
           ": it needs " + std::to_string(n) + " bytes but only " + std::to_string(size_ - pos_) +
           " remain before " + limit_ + ".");
}

void fail(const std::string& file, uint64_t offset, const std::string& message) {
  SourceLocation where;
  where.file = file;
  where.byte_offset = offset;
  throw FormatError(message, where);
}

CbfHeader parse_header(const std::string& file, std::string_view data) {
  if (data.size() < 8) {
    fail(file, 0,
         "The file is " + std::to_string(data.size()) +
             " bytes long; it is not a valid CNTK binary format file (too short for the 8-byte magic "
             "number).");
  }
  uint64_t first;
  std::memcpy(&first, data.data(), sizeof first);
  if (first == kCbfMagic) return parse_current(file, data);
  if (first == static_cast<uint64_t>(kLegacyVersion)) return parse_legacy(file, data);
  fail(file, 0,
       "The file is not a valid CNTK binary format file: it starts with neither the CBF magic number "
       "(\"nib_ktnc\") nor the legacy version number 1.");
}

}  // namespace cbf

const char* to_string(CbfLayout layout) {
  return layout == CbfLayout::kCurrent ? "CBF" : "legacy CBF v1";
}

uint64_t CbfHeader::total_sequences() const {
  uint64_t n = 0;
  for (const CbfChunkHeader& c : chunks) n += c.sequences;
  return n;
}

uint64_t CbfHeader::total_samples() const {
  uint64_t n = 0;
  for (const CbfChunkHeader& c : chunks) n += c.samples;
  return n;
}

std::optional<CbfLayout> detect_cbf_layout(const std::string& path) {
  core::MappedFile file(path);
  if (file.size() < 8) return std::nullopt;
  uint64_t first;
  std::memcpy(&first, file.data(), sizeof first);
  if (first == kCbfMagic) return CbfLayout::kCurrent;
  if (first == static_cast<uint64_t>(cbf::kLegacyVersion)) return CbfLayout::kLegacyV1;
  return std::nullopt;
}

CbfHeader read_cbf_header(const std::string& path) {
  core::MappedFile file(path);
  return cbf::parse_header(path, file.view());
}

}  // namespace cntkio
