// Chunk bodies of both CBF layouts (spec cbf.md §1.1, §1.2 step 7, §3.1, §3.2). Every count read from the
// file is checked against the bytes left in the chunk before it is used.
#include "formats/cbf/cbf_chunk.hpp"

#include <algorithm>
#include <cstring>

#include "cntkio/errors.hpp"
#include "formats/cbf/cbf_format.hpp"

namespace cntkio::cbf {
namespace {

std::string str(uint64_t v) {
  return std::to_string(v);
}

std::string limit_of(uint32_t index, const CbfChunkHeader& chunk) {
  return "the end of chunk " + str(index) + " at byte offset " + str(chunk.offset + chunk.size);
}

[[noreturn]] void fail_sequence(const ChunkContext& context, uint64_t offset, const CbfStreamHeader& stream,
                                uint64_t key, const std::string& message) {
  SourceLocation where;
  where.file = *context.file;
  where.byte_offset = offset;
  where.stream = stream.name;
  where.sequence_key = std::to_string(key);
  throw FormatError(message, where);
}

// A double array that does not start on an 8-byte boundary of the mapping.
struct Misaligned {
  SequenceData* view;
  size_t count;  // number of doubles
};

// Copies misaligned double arrays into memory the chunk owns, so that every `values` pointer handed out
// is suitably aligned for its element type.
void realign(CbfChunk& chunk, const std::vector<Misaligned>& misaligned) {
  if (misaligned.empty()) return;
  size_t total = 0;
  for (const Misaligned& m : misaligned) total += m.count;
  chunk.realigned.resize(total);
  size_t at = 0;
  for (const Misaligned& m : misaligned) {
    std::memcpy(chunk.realigned.data() + at, m.view->values, m.count * sizeof(double));
    m.view->values = chunk.realigned.data() + at;
    at += m.count;
  }
}

bool is_misaligned(const void* p, ElementType type) {
  return reinterpret_cast<uintptr_t>(p) % element_size(type) != 0;
}

}  // namespace

void CbfChunk::get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const {
  if (index_in_chunk >= sequences_) {
    throw UsageError("CBF chunk has " + str(sequences_) + " sequences; sequence " + str(index_in_chunk) +
                     " does not exist.");
  }
  for (size_t s = 0; s < streams_; ++s) out.push_back(views_[s * sequences_ + index_in_chunk]);
}

void read_current_lengths(const ChunkContext& context, uint32_t index, std::vector<uint32_t>& lengths) {
  const CbfChunkHeader& chunk = context.header->chunks[index];
  const auto* base = reinterpret_cast<const unsigned char*>(context.mapping->data()) + chunk.offset;
  Cursor c(*context.file, base, chunk.size, chunk.offset, limit_of(index, chunk));
  const unsigned char* prefix = c.take(uint64_t{4} * chunk.sequences, "the sequence lengths");
  const size_t first = lengths.size();
  lengths.resize(first + chunk.sequences);
  std::memcpy(lengths.data() + first, prefix, uint64_t{4} * chunk.sequences);
  uint64_t sum = 0;
  for (size_t i = first; i < lengths.size(); ++i) sum += lengths[i];
  if (sum != chunk.samples) {
    fail(*context.file, chunk.offset,
         "The sequence lengths of chunk " + str(index) + " add up to " + str(sum) +
             " samples, but the chunk table says " + str(chunk.samples) + ".");
  }
}

std::shared_ptr<CbfChunk> parse_current_chunk(const ChunkContext& context, uint32_t index,
                                              uint64_t first_sequence) {
  const CbfHeader& header = *context.header;
  const CbfChunkHeader& info = header.chunks[index];
  const uint32_t n = info.sequences;
  auto chunk = std::make_shared<CbfChunk>(context.mapping, header.streams.size(), n);
  const auto* base = reinterpret_cast<const unsigned char*>(context.mapping->data()) + info.offset;
  Cursor c(*context.file, base, info.size, info.offset, limit_of(index, info));
  c.take(uint64_t{4} * n, "the sequence lengths");  // read by read_current_lengths
  std::vector<Misaligned> misaligned;
  for (size_t s = 0; s < header.streams.size(); ++s) {
    const CbfStreamHeader& stream = header.streams[s];
    const uint64_t esize = element_size(stream.element_type);
    for (uint32_t j = 0; j < n; ++j) {
      const uint64_t key = first_sequence + j;
      SequenceData& view = chunk->view(s, j);
      const uint64_t record_at = c.offset();
      const uint32_t samples = c.u32("a sequence's sample count");
      view.number_of_samples = samples;
      if (stream.storage == StorageFormat::kDense) {
        const uint64_t sample_bytes = stream.dim * esize;
        if (samples > c.remaining() / sample_bytes) {
          fail_sequence(context, record_at, stream, key,
                        "Sequence " + str(j) + " of chunk " + str(index) + " claims " + str(samples) +
                            " samples of " + str(sample_bytes) + " bytes for dense input '" + stream.name +
                            "', more than the " + str(c.remaining()) + " bytes left in the chunk.");
        }
        view.values = c.take(samples * sample_bytes, "dense values");
        if (samples > 0 && is_misaligned(view.values, stream.element_type)) {
          misaligned.push_back({&view, samples * stream.dim});
        }
        continue;
      }
      const uint64_t nnz_at = c.offset();
      const uint32_t nnz = c.u32("a sequence's nnz count");
      if (nnz > c.remaining() / (esize + 4) ||
          uint64_t{samples} > (c.remaining() - uint64_t{nnz} * (esize + 4)) / 4) {
        fail_sequence(context, nnz_at, stream, key,
                      "Sequence " + str(j) + " of chunk " + str(index) + " claims nnz " + str(nnz) + " and " +
                          str(samples) + " samples for sparse input '" + stream.name + "', more than the " +
                          str(c.remaining()) + " bytes left in the chunk.");
      }
      view.total_nnz = nnz;
      view.values = c.take(uint64_t{nnz} * esize, "sparse values");
      const uint64_t indices_at = c.offset();
      view.indices = reinterpret_cast<const int32_t*>(c.take(uint64_t{nnz} * 4, "sparse row indices"));
      const uint64_t counts_at = c.offset();
      view.nnz_counts =
          reinterpret_cast<const uint32_t*>(c.take(uint64_t{samples} * 4, "per-sample nnz counts"));
      uint64_t sum = 0;
      for (uint32_t k = 0; k < samples; ++k) {
        const auto count = static_cast<int32_t>(view.nnz_counts[k]);
        if (count < 0) {
          fail_sequence(context, counts_at + 4 * uint64_t{k}, stream, key,
                        "Sample " + str(k) + " of sequence " + str(j) + " of chunk " + str(index) +
                            " has a negative nnz count " + std::to_string(count) + ".");
        }
        sum += static_cast<uint64_t>(count);
      }
      if (sum != nnz) {
        fail_sequence(context, counts_at, stream, key,
                      "The per-sample nnz counts of sequence " + str(j) + " of chunk " + str(index) +
                          " add up to " + str(sum) + ", but its nnz is " + str(nnz) + ".");
      }
      const auto dim = static_cast<int32_t>(stream.dim);
      for (uint32_t k = 0; k < nnz; ++k) {
        const int32_t row = view.indices[k];
        if (row < 0 || row >= dim) {
          fail_sequence(context, indices_at + 4 * uint64_t{k}, stream, key,
                        "Row index " + std::to_string(row) + " of sequence " + str(j) + " of chunk " +
                            str(index) + " is outside the dimension " + str(stream.dim) +
                            " of sparse input '" + stream.name + "'.");
        }
      }
      if (nnz > 0 && is_misaligned(view.values, stream.element_type)) misaligned.push_back({&view, nnz});
    }
  }
  realign(*chunk, misaligned);
  return chunk;
}

std::shared_ptr<CbfChunk> parse_legacy_chunk(const ChunkContext& context, uint32_t index,
                                             uint64_t first_sequence, std::vector<uint32_t>& lengths) {
  const CbfHeader& header = *context.header;
  const CbfChunkHeader& info = header.chunks[index];
  const uint32_t n = info.sequences;
  auto chunk = std::make_shared<CbfChunk>(context.mapping, header.streams.size(), n);
  const auto* base = reinterpret_cast<const unsigned char*>(context.mapping->data()) + info.offset;
  Cursor c(*context.file, base, info.size, info.offset, limit_of(index, info));
  lengths.assign(n, 1);
  std::vector<Misaligned> misaligned;
  // Bound on the per-sample count arrays, which the row indices (not the file size) determine.
  const uint64_t max_counts = header.file_size / 4 + n;
  for (size_t s = 0; s < header.streams.size(); ++s) {
    const CbfStreamHeader& stream = header.streams[s];
    const uint64_t esize = element_size(stream.element_type);
    if (stream.storage == StorageFormat::kDense) {
      // Every sequence is one sample: n * dim values (the header check guarantees they fit).
      const uint64_t sample_bytes = stream.dim * esize;
      const unsigned char* values = c.take(n * sample_bytes, "dense values");
      for (uint32_t j = 0; j < n; ++j) {
        SequenceData& view = chunk->view(s, j);
        view.number_of_samples = 1;
        view.values = values + j * sample_bytes;
        if (is_misaligned(view.values, stream.element_type)) misaligned.push_back({&view, stream.dim});
      }
      continue;
    }
    const uint64_t nnz_at = c.offset();
    const int32_t signed_nnz = c.i32("a sparse block's nnz count");
    if (signed_nnz < 0) {
      c.error_at(nnz_at, "Sparse input '" + stream.name + "' of chunk " + str(index) +
                             " has a negative nnz " + std::to_string(signed_nnz) + ".");
    }
    const auto nnz = static_cast<uint64_t>(signed_nnz);
    if (nnz > c.remaining() / (esize + 4) || uint64_t{4} * (n + 1) > c.remaining() - nnz * (esize + 4)) {
      c.error_at(nnz_at, "Sparse input '" + stream.name + "' of chunk " + str(index) + " claims nnz " +
                             str(nnz) + ", more than the " + str(c.remaining()) +
                             " bytes left in the chunk.");
    }
    const unsigned char* values = c.take(nnz * esize, "sparse values");
    const uint64_t rows_at = c.offset();
    const unsigned char* rows_bytes = c.take(nnz * 4, "sparse row indices");
    const uint64_t starts_at = c.offset();
    const unsigned char* starts_bytes = c.take(uint64_t{4} * (n + 1), "column starts");
    auto row_of = [rows_bytes](uint64_t k) {
      int32_t v;
      std::memcpy(&v, rows_bytes + 4 * k, 4);
      return v;
    };
    auto start_of = [starts_bytes](uint64_t k) {
      int32_t v;
      std::memcpy(&v, starts_bytes + 4 * k, 4);
      return v;
    };
    if (start_of(0) != 0 || static_cast<uint64_t>(start_of(n)) != nnz) {
      c.error_at(starts_at, "The column starts of sparse input '" + stream.name + "' of chunk " + str(index) +
                                " must begin with 0 and end with nnz " + str(nnz) + " (they are " +
                                std::to_string(start_of(0)) + " and " + std::to_string(start_of(n)) + ").");
    }
    // Pass 1: check the columns and row indices, and count each sequence's samples.
    std::vector<uint32_t> samples(n, 1);
    uint64_t total_counts = 0;
    for (uint32_t j = 0; j < n; ++j) {
      const int32_t begin = start_of(j);
      const int32_t end = start_of(j + 1);
      if (end < begin || end > signed_nnz) {
        c.error_at(starts_at + 4 * uint64_t{j + 1},
                   "The column starts of sparse input '" + stream.name + "' of chunk " + str(index) +
                       " decrease or exceed nnz at sequence " + str(j) + " (" + std::to_string(begin) +
                       " then " + std::to_string(end) + ").");
      }
      int64_t last_sample = -1;
      for (int32_t k = begin; k < end; ++k) {
        const int32_t row = row_of(static_cast<uint64_t>(k));
        const int64_t sample = row < 0 ? -1 : row / static_cast<int64_t>(stream.dim);
        if (row < 0 || sample < last_sample) {
          fail_sequence(
              context, rows_at + 4 * static_cast<uint64_t>(k), stream, first_sequence + j,
              "Row index " + std::to_string(row) + " of sequence " + str(j) + " of chunk " + str(index) +
                  (row < 0 ? std::string(" is negative.")
                           : " goes back to sample " + std::to_string(sample) + " after sample " +
                                 std::to_string(last_sample) + "; entries must be ordered by sample."));
        }
        last_sample = sample;
      }
      samples[j] = static_cast<uint32_t>(std::max<int64_t>(1, last_sample + 1));
      total_counts += samples[j];
      if (total_counts > max_counts) {
        fail_sequence(context, rows_at + 4 * static_cast<uint64_t>(end - 1), stream, first_sequence + j,
                      "The row indices of sparse input '" + stream.name + "' of chunk " + str(index) +
                          " place entries at sample " + str(samples[j] - 1) +
                          ", more samples than the file can describe.");
      }
    }
    // Pass 2: the chunk's own index and count arrays (row mod dim, entries per sample).
    std::vector<int32_t> indices(nnz);
    std::vector<uint32_t> counts(total_counts, 0);
    uint64_t count_at = 0;
    for (uint32_t j = 0; j < n; ++j) {
      const int32_t begin = start_of(j);
      const int32_t end = start_of(j + 1);
      for (int32_t k = begin; k < end; ++k) {
        const auto row = static_cast<uint64_t>(row_of(static_cast<uint64_t>(k)));
        indices[static_cast<size_t>(k)] = static_cast<int32_t>(row % stream.dim);
        ++counts[count_at + row / stream.dim];
      }
      SequenceData& view = chunk->view(s, j);
      view.number_of_samples = samples[j];
      view.total_nnz = static_cast<size_t>(end - begin);
      view.values = values + static_cast<uint64_t>(begin) * esize;
      view.indices = indices.data() + begin;
      view.nnz_counts = counts.data() + count_at;
      if (view.total_nnz > 0 && is_misaligned(view.values, stream.element_type)) {
        misaligned.push_back({&view, view.total_nnz});
      }
      count_at += samples[j];
      lengths[j] = std::max(lengths[j], samples[j]);
    }
    (void)rows_at;
    chunk->indices.push_back(std::move(indices));
    chunk->nnz_counts.push_back(std::move(counts));
  }
  realign(*chunk, misaligned);
  return chunk;
}

}  // namespace cntkio::cbf
