// CbfWriter: the current layout (spec cbf.md §1.1) and the legacy v1 layout (§3.1), chunked by bytes.
//
// Unlike ctf2bin.py (spec §2.3), the chunk size is measured per chunk: a chunk is closed before the
// sequence that would make its body exceed chunk_size_in_bytes, so every chunk but one holding a single
// oversized sequence respects the limit.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include "cntkio/cbf.hpp"
#include "cntkio/errors.hpp"
#include "core/input_file.hpp"
#include "core/output_file.hpp"
#include "formats/cbf/cbf_format.hpp"

namespace cntkio {
namespace {

using cbf::put_le;
using cbf::put_u8;

constexpr uint64_t kMaxU32 = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kMaxI32 = std::numeric_limits<int32_t>::max();

std::string str(uint64_t v) {
  return std::to_string(v);
}

// Appends `count` values of type `from` converted to `to`; returns how many finite doubles became an
// infinite float (beyond float's range).
uint64_t append_values(std::vector<unsigned char>& out, const void* src, size_t count, ElementType from,
                       ElementType to) {
  if (count == 0) return 0;
  uint64_t overflowed = 0;
  const size_t at = out.size();
  out.resize(at + count * element_size(to));
  unsigned char* dst = out.data() + at;
  const auto* in = static_cast<const unsigned char*>(src);
  if (from == to) {
    std::memcpy(dst, in, count * element_size(to));
  } else if (from == ElementType::kFloat) {
    for (size_t i = 0; i < count; ++i) {
      float f;
      std::memcpy(&f, in + 4 * i, 4);
      const double d = f;
      std::memcpy(dst + 8 * i, &d, 8);
    }
  } else {
    for (size_t i = 0; i < count; ++i) {
      double d;
      std::memcpy(&d, in + 8 * i, 8);
      const auto f = static_cast<float>(d);
      if (std::isinf(f) && std::isfinite(d)) ++overflowed;
      std::memcpy(dst + 4 * i, &f, 4);
    }
  }
  return overflowed;
}

// A sequence's per-stream facts, checked before anything is written.
struct StreamPart {
  uint32_t samples = 0;
  uint64_t nnz = 0;    // sparse: sum of the per-sample counts
  uint64_t bytes = 0;  // bytes this sequence adds to the chunk for this stream
};

}  // namespace

struct CbfWriter::Impl {
  struct LegacySparse {
    std::vector<unsigned char> values;
    std::vector<int32_t> rows;
    std::vector<int32_t> starts{0};
  };

  Impl(std::string path, std::vector<CbfWriterStream> s, CbfWriterOptions o)
      : streams(std::move(s)), options(o), out(path) {
    const bool legacy = options.layout == CbfLayout::kLegacyV1;
    if (streams.empty()) throw UsageError("A CBF file needs at least one stream.");
    if (options.chunk_size_in_bytes == 0) throw UsageError("The chunk size must be greater than 0.");
    for (const CbfWriterStream& st : streams) {
      const uint64_t max_dim = legacy || st.storage == StorageFormat::kSparseCsc ? kMaxI32 : kMaxU32;
      if (st.dim == 0 || st.dim > max_dim) {
        throw UsageError("Stream '" + st.name + "' has dimension " + str(st.dim) + "; a " +
                         to_string(options.layout) + " " + to_string(st.storage) + " stream needs 1 to " +
                         str(max_dim) + ".");
      }
      if (st.name.size() > (legacy ? kMaxI32 : kMaxU32)) throw UsageError("Stream name too long.");
    }
    bodies.resize(streams.size());
    if (legacy) {
      legacy_sparse.resize(streams.size());
      data = std::make_unique<core::OutputFile>(path + ".data");
    } else {
      std::vector<unsigned char> prefix;
      put_le<uint64_t>(prefix, kCbfMagic);
      put_le<uint32_t>(prefix, cbf::kVersion);
      out.write(prefix);
    }
    start_chunk();
  }

  bool legacy() const { return options.layout == CbfLayout::kLegacyV1; }

  void start_chunk() {
    lengths.clear();
    for (auto& b : bodies) b.clear();
    chunk_samples = 0;
    chunk_bytes = 0;
    if (legacy()) {
      for (size_t s = 0; s < streams.size(); ++s) {
        legacy_sparse[s] = LegacySparse{};
        if (streams[s].storage == StorageFormat::kSparseCsc) chunk_bytes += 8;  // nnz + first column start
      }
    }
  }

  std::vector<StreamPart> check(const std::vector<SequenceData>& data, const std::vector<ElementType>& types,
                                uint32_t& length) const {
    if (data.size() != streams.size() || types.size() != streams.size()) {
      throw UsageError("CbfWriter::add_sequence got " + str(data.size()) + " stream(s) and " +
                       str(types.size()) + " type(s) for a file with " + str(streams.size()) + " streams.");
    }
    std::vector<StreamPart> parts(streams.size());
    uint32_t longest = 0;
    const std::string where = " of sequence " + str(sequences);
    for (size_t s = 0; s < streams.size(); ++s) {
      const CbfWriterStream& st = streams[s];
      const SequenceData& d = data[s];
      StreamPart& p = parts[s];
      if (!d.valid) throw UsageError("Stream '" + st.name + "'" + where + " has no valid data.");
      p.samples = d.number_of_samples;
      longest = std::max(longest, p.samples);
      const uint64_t esize = element_size(st.element_type);
      if (st.storage == StorageFormat::kDense) {
        if (p.samples > 0 && d.values == nullptr)
          throw UsageError("Stream '" + st.name + "'" + where + " has no values.");
        if (legacy()) {
          if (p.samples != 1) {
            throw UsageError("Dense stream '" + st.name + "'" + where + " has " + str(p.samples) +
                             " samples; the legacy CBF v1 layout stores exactly one sample per sequence for "
                             "dense streams.");
          }
          p.bytes = st.dim * esize;
        } else {
          p.bytes = 4 + uint64_t{p.samples} * st.dim * esize;
        }
        continue;
      }
      if (p.samples > 0 && d.nnz_counts == nullptr) {
        throw UsageError("Sparse stream '" + st.name + "'" + where + " has no nnz counts.");
      }
      for (uint32_t k = 0; k < p.samples; ++k) p.nnz += d.nnz_counts[k];
      if (p.nnz > d.total_nnz) {
        throw UsageError("The nnz counts of sparse stream '" + st.name + "'" + where + " add up to " +
                         str(p.nnz) + ", more than its " + str(d.total_nnz) + " entries.");
      }
      if (p.nnz > 0 && (d.values == nullptr || d.indices == nullptr)) {
        throw UsageError("Sparse stream '" + st.name + "'" + where + " has no values or indices.");
      }
      for (uint64_t k = 0; k < p.nnz; ++k) {
        if (d.indices[k] < 0 || static_cast<uint64_t>(d.indices[k]) >= st.dim) {
          throw UsageError("Sparse stream '" + st.name + "'" + where + " has index " +
                           std::to_string(d.indices[k]) + ", outside its dimension " + str(st.dim) + ".");
        }
      }
      if (legacy()) {
        if (p.samples == 0 || (p.samples > 1 && d.nnz_counts[p.samples - 1] == 0)) {
          throw UsageError("Sparse stream '" + st.name + "'" + where + " has " +
                           (p.samples == 0 ? std::string("no sample") : std::string("an empty last sample")) +
                           "; the legacy CBF v1 layout cannot store it (it derives the sample count from the "
                           "last entry).");
        }
        if (uint64_t{p.samples - 1} * st.dim + st.dim - 1 > kMaxI32) {
          throw UsageError("Sparse stream '" + st.name + "'" + where + " has " + str(p.samples) +
                           " samples of dimension " + str(st.dim) +
                           "; the legacy CBF v1 layout stores sample * dim + index in 32 bits.");
        }
        p.bytes = p.nnz * (esize + 4) + 4;
      } else {
        p.bytes = 8 + p.nnz * (esize + 4) + 4 * uint64_t{p.samples};
      }
    }
    if (legacy()) {
      const uint32_t derived = std::max<uint32_t>(1, longest);
      if (length != 0 && length != derived) {
        throw UsageError("Sequence " + str(sequences) + " has scheduling length " + str(length) +
                         " but its longest stream has " + str(derived) +
                         " samples; the legacy CBF v1 layout stores no sequence lengths.");
      }
      length = derived;
    } else if (length == 0) {
      length = longest;
    } else if (length > longest) {
      throw UsageError("Sequence " + str(sequences) + " has scheduling length " + str(length) +
                       " but its longest stream has " + str(longest) +
                       " samples; a CBF reader refuses a length beyond the samples a sequence holds.");
    }
    return parts;
  }

  void add(const std::vector<SequenceData>& data, const std::vector<ElementType>& types, uint32_t length) {
    if (finished) throw UsageError("CbfWriter::add_sequence after finish().");
    std::vector<StreamPart> parts = check(data, types, length);
    uint64_t bytes = legacy() ? 0 : 4;
    for (const StreamPart& p : parts) bytes += p.bytes;
    const uint64_t max_count = legacy() ? kMaxI32 : kMaxU32;
    bool nnz_full = false;
    if (legacy()) {
      for (size_t s = 0; s < streams.size(); ++s) {
        if (streams[s].storage == StorageFormat::kSparseCsc &&
            legacy_sparse[s].rows.size() + parts[s].nnz > kMaxI32) {
          nnz_full = true;
        }
      }
    }
    if (!lengths.empty() && (chunk_bytes + bytes > options.chunk_size_in_bytes ||
                             lengths.size() >= max_count || chunk_samples + length > max_count || nnz_full)) {
      flush();
    }
    for (size_t s = 0; s < streams.size(); ++s) {
      if (parts[s].nnz > kMaxI32)
        throw UsageError("Sparse stream '" + streams[s].name + "' has too many entries.");
    }
    lengths.push_back(length);
    chunk_samples += length;
    chunk_bytes += bytes;
    for (size_t s = 0; s < streams.size(); ++s) append(s, data[s], types[s], parts[s]);
    ++sequences;
    samples += length;
  }

  void append(size_t s, const SequenceData& d, ElementType from, const StreamPart& p) {
    const CbfWriterStream& st = streams[s];
    std::vector<unsigned char>& body = bodies[s];
    if (st.storage == StorageFormat::kDense) {
      if (!legacy()) put_le<uint32_t>(body, p.samples);
      overflowed += append_values(body, d.values, p.samples * st.dim, from, st.element_type);
      return;
    }
    if (legacy()) {
      LegacySparse& ls = legacy_sparse[s];
      overflowed += append_values(ls.values, d.values, p.nnz, from, st.element_type);
      uint64_t k = 0;
      for (uint32_t sample = 0; sample < p.samples; ++sample) {
        for (uint32_t e = 0; e < d.nnz_counts[sample]; ++e, ++k) {
          ls.rows.push_back(
              static_cast<int32_t>(uint64_t{sample} * st.dim + static_cast<uint64_t>(d.indices[k])));
        }
      }
      ls.starts.push_back(static_cast<int32_t>(ls.rows.size()));
      return;
    }
    put_le<uint32_t>(body, p.samples);
    put_le<uint32_t>(body, static_cast<uint32_t>(p.nnz));
    overflowed += append_values(body, d.values, p.nnz, from, st.element_type);
    const size_t at = body.size();
    body.resize(at + 4 * p.nnz + 4 * uint64_t{p.samples});
    // An empty sample list may come with null pointers, which memcpy must not see even for 0 bytes.
    if (p.nnz > 0) std::memcpy(body.data() + at, d.indices, 4 * p.nnz);
    if (p.samples > 0) std::memcpy(body.data() + at + 4 * p.nnz, d.nnz_counts, 4 * uint64_t{p.samples});
  }

  void flush() {
    if (lengths.empty()) return;
    CbfChunkHeader row;
    row.sequences = static_cast<uint32_t>(lengths.size());
    row.samples = static_cast<uint32_t>(chunk_samples);
    if (!legacy()) {
      row.offset = out.position();
      out.write(lengths.data(), 4 * lengths.size());
      for (const auto& b : bodies) out.write(b);
    } else {
      row.offset = data->position();
      for (size_t s = 0; s < streams.size(); ++s) {
        if (streams[s].storage == StorageFormat::kDense) {
          data->write(bodies[s]);
          continue;
        }
        const LegacySparse& ls = legacy_sparse[s];
        const auto nnz = static_cast<int32_t>(ls.rows.size());
        data->write(&nnz, 4);
        data->write(ls.values);
        data->write(ls.rows.data(), 4 * ls.rows.size());
        data->write(ls.starts.data(), 4 * ls.starts.size());
      }
    }
    row.size = (legacy() ? data->position() : out.position()) - row.offset;
    table.push_back(row);
    start_chunk();
  }

  void finish() {
    if (finished) return;
    flush();
    std::vector<unsigned char> header;
    if (!legacy()) {
      const uint64_t header_offset = out.position();
      put_le<uint64_t>(header, kCbfMagic);
      put_le<uint32_t>(header, static_cast<uint32_t>(table.size()));
      put_le<uint32_t>(header, static_cast<uint32_t>(streams.size()));
      for (const CbfWriterStream& st : streams) {
        put_u8(header, st.storage == StorageFormat::kDense ? 0 : 1);
        put_le<uint32_t>(header, static_cast<uint32_t>(st.name.size()));
        header.insert(header.end(), st.name.begin(), st.name.end());
        put_u8(header, st.element_type == ElementType::kFloat ? 0 : 1);
        put_le<uint32_t>(header, static_cast<uint32_t>(st.dim));
      }
      for (const CbfChunkHeader& row : table) {
        put_le<int64_t>(header, static_cast<int64_t>(row.offset));
        put_le<uint32_t>(header, row.sequences);
        put_le<uint32_t>(header, row.samples);
      }
      put_le<int64_t>(header, static_cast<int64_t>(header_offset));
      out.write(header);
    } else {
      put_le<int64_t>(header, cbf::kLegacyVersion);
      put_le<int64_t>(header, static_cast<int64_t>(table.size()));
      put_le<int32_t>(header, static_cast<int32_t>(streams.size()));
      for (const CbfWriterStream& st : streams) {
        put_le<int32_t>(header, static_cast<int32_t>(st.name.size()));
        header.insert(header.end(), st.name.begin(), st.name.end());
        const int32_t type = st.element_type == ElementType::kFloat ? 0 : 1;
        if (st.storage == StorageFormat::kDense) {
          put_le<int32_t>(header, 0);
          put_le<int32_t>(header, type);
        } else {
          put_le<int32_t>(header, 1);
          put_le<int32_t>(header, 0);  // CSC
          put_le<int32_t>(header, type);
          put_le<int32_t>(header, 1);  // isSequence
        }
        put_le<int32_t>(header, static_cast<int32_t>(st.dim));
      }
      for (const CbfChunkHeader& row : table) {
        put_le<int64_t>(header, static_cast<int64_t>(row.offset));
        put_le<int32_t>(header, static_cast<int32_t>(row.sequences));
        put_le<int32_t>(header, static_cast<int32_t>(row.samples));
      }
      out.write(header);
      copy_data();
    }
    out.commit();
    data.reset();  // removes the temporary data file
    finished = true;
  }

  // Appends the legacy chunk data, kept in a temporary file while the header was not known, to the output.
  void copy_data() {
    data->flush();
    const core::InputFile file = core::InputFile::open(data->partial_path(), "cannot open temporary file");
    std::vector<unsigned char> buffer(1 << 20);
    for (uint64_t at = 0; at < data->position();) {
      const size_t n =
          file.read_at(at, buffer.data(), std::min<uint64_t>(buffer.size(), data->position() - at));
      if (n == 0) throw IoError("temporary file ended early", data->partial_path(), 0);
      out.write(buffer.data(), n);
      at += n;
    }
  }

  std::vector<CbfWriterStream> streams;
  CbfWriterOptions options;
  core::OutputFile out;
  std::unique_ptr<core::OutputFile> data;  // legacy: chunk data, appended after the header by finish()
  std::vector<uint32_t> lengths;           // pending chunk: scheduling lengths
  std::vector<std::vector<unsigned char>> bodies;  // pending chunk: per stream records (legacy: dense values)
  std::vector<LegacySparse> legacy_sparse;         // pending chunk, legacy sparse blocks
  uint64_t chunk_bytes = 0;
  uint64_t chunk_samples = 0;
  std::vector<CbfChunkHeader> table;
  uint64_t sequences = 0;
  uint64_t samples = 0;
  uint64_t overflowed = 0;  // finite doubles written as infinite floats
  bool finished = false;
};

CbfWriter::CbfWriter(std::string path, std::vector<CbfWriterStream> streams, CbfWriterOptions options)
    : impl_(std::make_unique<Impl>(std::move(path), std::move(streams), options)) {}

CbfWriter::~CbfWriter() = default;

void CbfWriter::add_sequence(const std::vector<SequenceData>& data, const std::vector<ElementType>& types,
                             uint32_t length) {
  impl_->add(data, types, length);
}

void CbfWriter::finish() {
  impl_->finish();
}
uint64_t CbfWriter::sequences() const {
  return impl_->sequences;
}
uint64_t CbfWriter::samples() const {
  return impl_->samples;
}
uint64_t CbfWriter::chunks() const {
  return impl_->table.size();
}
uint64_t CbfWriter::bytes_written() const {
  return impl_->out.position();
}
uint64_t CbfWriter::overflowed_values() const {
  return impl_->overflowed;
}

}  // namespace cntkio
