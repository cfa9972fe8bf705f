// Chunk bodies of both CBF layouts (spec cbf.md §1.1, §1.2 step 7, §3.1, §3.2). Every count read from the
// file is checked against the bytes left in the chunk before it is used.
#include "formats/cbf/cbf_chunk.hpp"

#include <sys/mman.h>

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

// Index of the first count whose int32 value is negative, or n; `sum` receives the sum of the counts.
// The common case is a branch-free scan that the compiler vectorizes.
uint32_t first_negative(const uint32_t* counts, uint32_t n, uint64_t& sum) {
  uint64_t total = 0;
  uint32_t sign_bits = 0;
  for (uint32_t k = 0; k < n; ++k) {
    total += counts[k];
    sign_bits |= counts[k];
  }
  sum = total;
  if ((sign_bits & 0x80000000u) == 0) return n;
  uint32_t k = 0;
  while (static_cast<int32_t>(counts[k]) >= 0) ++k;
  return k;
}

// Index of the first row outside [0, dim), or n (negative rows compare as large unsigned values).
uint32_t first_out_of_range(const int32_t* indices, uint32_t n, uint32_t dim) {
  const auto* rows = reinterpret_cast<const uint32_t*>(indices);
  uint32_t bad = 0;
  for (uint32_t k = 0; k < n; ++k) bad |= static_cast<uint32_t>(rows[k] >= dim);
  if (bad == 0) return n;
  uint32_t k = 0;
  while (rows[k] < dim) ++k;
  return k;
}

// The records of an input are walked one after the other, each position known only after the previous
// record's counts are read, so every record would cost a memory round trip. This predicts where the record
// kAhead places further starts (from the sequence lengths and the bytes per sample of the last record) and
// prefetches that line: for records whose size follows their length (all dense data, sparse data with a
// steady number of entries per sample) the walk then finds each header in the cache, and it reads nothing
// else, so the values are read once, by whoever consumes them.
class HeaderPrefetcher {
 public:
  static constexpr uint32_t kAhead = 12;

  HeaderPrefetcher(const unsigned char* lengths, uint32_t n, const unsigned char* end, uint64_t fixed_bytes)
      : lengths_(lengths), n_(n), end_(end), fixed_(fixed_bytes) {
    for (uint32_t i = 0; i < std::min(kAhead, n_); ++i) window_ += length(i);
  }

  // Called with the position of record j before it is read.
  void at(uint32_t j, const unsigned char* position) {
    if (j > 0) {
      window_ -= length(j - 1);
      if (j + kAhead - 1 < n_) window_ += length(j + kAhead - 1);
    }
    const uint64_t ahead = std::min<uint64_t>(kAhead, n_ - j);
    const uint64_t distance = ahead * fixed_ + window_ * bytes_per_sample_;
    if (distance < static_cast<uint64_t>(end_ - position)) __builtin_prefetch(position + distance, 0, 3);
  }

  // Learns from record j, which took `bytes`.
  void learn(uint32_t j, uint64_t bytes) {
    const uint32_t len = length(j);
    if (len > 0 && bytes >= fixed_) bytes_per_sample_ = (bytes - fixed_) / len;
  }

 private:
  uint32_t length(uint32_t i) const {
    uint32_t v;
    std::memcpy(&v, lengths_ + 4 * uint64_t{i}, 4);
    return v;
  }

  const unsigned char* lengths_;
  uint32_t n_;
  const unsigned char* end_;
  uint64_t fixed_;
  uint64_t window_ = 0;
  uint64_t bytes_per_sample_ = 0;
};

// Maps the chunk's pages with one call instead of a page fault every few pages (prefetches into pages
// not mapped yet are dropped). Best effort: kernels before 5.14 do not know the advice and ignore it.
void populate(const unsigned char* begin, uint64_t size) {
  constexpr int kPopulateRead = 22;  // MADV_POPULATE_READ
  const uintptr_t start = reinterpret_cast<uintptr_t>(begin) & ~uintptr_t{4095};
  const uintptr_t end = reinterpret_cast<uintptr_t>(begin) + size;
  if (end > start) ::madvise(reinterpret_cast<void*>(start), end - start, kPopulateRead);
}

bool is_misaligned(const void* p, ElementType type) {
  return reinterpret_cast<uintptr_t>(p) % element_size(type) != 0;
}

// The scheduling lengths of chunk `index` must add up to its row's sample count: the randomizers plan
// sweeps and epochs with the row's count and then hand out the sequences with their lengths.
void check_length_sum(const ChunkContext& context, uint32_t index, uint64_t sum, const char* what) {
  const CbfChunkHeader& chunk = context.header->chunks[index];
  if (sum != chunk.samples) {
    fail(*context.file, chunk.row_offset,
         std::string(what) + " of chunk " + str(index) + " add up to " + str(sum) +
             " samples, but its chunk table row (byte offset " + str(chunk.row_offset) + ") says " +
             str(chunk.samples) + ".");
  }
}

// Bytes between a chunk's last record and its end are data that no row of the chunk table describes.
void check_no_bytes_left(const ChunkContext& context, uint32_t index, const Cursor& c) {
  if (c.remaining() == 0) return;
  const CbfChunkHeader& chunk = context.header->chunks[index];
  fail(*context.file, chunk.row_offset,
       "Chunk " + str(index) + " declares " + str(chunk.sequences) +
           " sequences (chunk table row at byte offset " + str(chunk.row_offset) +
           "), whose records end at " + "byte offset " + str(c.offset()) +
           ", but the chunk ends at byte offset " + str(chunk.offset + chunk.size) + ": " +
           str(c.remaining()) + " bytes belong to no sequence.");
}

}  // namespace

void read_current_lengths(const ChunkContext& context, uint32_t index, uint64_t first_sequence,
                          std::vector<uint32_t>& lengths) {
  const CbfChunkHeader& chunk = context.header->chunks[index];
  const auto* base = reinterpret_cast<const unsigned char*>(context.mapping->data()) + chunk.offset;
  Cursor c(*context.file, base, chunk.size, chunk.offset, limit_of(index, chunk));
  const unsigned char* prefix = c.take(uint64_t{4} * chunk.sequences, "the sequence lengths");
  const size_t first = lengths.size();
  lengths.resize(first + chunk.sequences);
  std::memcpy(lengths.data() + first, prefix, uint64_t{4} * chunk.sequences);
  uint64_t sum = 0;
  for (size_t i = first; i < lengths.size(); ++i) {
    if (lengths[i] == 0) {
      // A sequence of no sample: CNTK's reader took it and its packer then failed on it.
      SourceLocation where;
      where.file = *context.file;
      where.byte_offset = chunk.offset + 4 * uint64_t{i - first};
      where.sequence_key = std::to_string(first_sequence + (i - first));
      throw FormatError("Sequences must be at least one frame long.", where);
    }
    sum += lengths[i];
  }
  check_length_sum(context, index, sum, "The sequence lengths");
}

CurrentChunk::CurrentChunk(const ChunkContext& context, uint32_t index, uint64_t first_sequence)
    : mapping_(context.mapping),
      base_(reinterpret_cast<const unsigned char*>(context.mapping->data()) +
            context.header->chunks[index].offset),
      file_(*context.file),
      offset_(context.header->chunks[index].offset),
      size_(context.header->chunks[index].size),
      index_(index),
      first_sequence_(first_sequence),
      sequences_(context.header->chunks[index].sequences),
      wide_records_(context.header->chunks[index].size > 0xFFFFFFFFu),
      realigned_(context.header->streams.size()) {
  for (const CbfStreamHeader& s : context.header->streams) {
    streams_.push_back(Stream{s.name, s.storage, static_cast<uint32_t>(element_size(s.element_type)), s.dim});
  }
  const size_t records = streams_.size() * sequences_;
  if (wide_records_) {
    records64_ = std::make_unique_for_overwrite<uint64_t[]>(records);
  } else {
    records32_ = std::make_unique_for_overwrite<uint32_t[]>(records);
  }
}

void CurrentChunk::set_realigned(size_t stream, uint32_t sequence, const double* values) {
  if (!realigned_[stream]) realigned_[stream] = std::make_unique<const double*[]>(sequences_);  // all null
  realigned_[stream][sequence] = values;
}

double* CurrentChunk::allocate_realigned(size_t count) {
  realigned_blocks_.push_back(std::make_unique_for_overwrite<double[]>(count));
  return realigned_blocks_.back().get();
}

void CurrentChunk::fail(size_t stream, uint32_t sequence, uint64_t offset, const std::string& message) const {
  SourceLocation where;
  where.file = file_;
  where.byte_offset = offset_ + offset;
  where.stream = streams_[stream].name;
  where.sequence_key = std::to_string(first_sequence_ + sequence);
  throw FormatError(message, where);
}

void CurrentChunk::get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const {
  if (index_in_chunk >= sequences_) {
    throw UsageError("Chunk " + str(index_) + " of the CBF file '" + file_ + "' has " + str(sequences_) +
                     " sequences; sequence " + str(index_in_chunk) + " does not exist.");
  }
  const uint32_t j = index_in_chunk;
  for (size_t s = 0; s < streams_.size(); ++s) {
    const Stream& stream = streams_[s];
    const uint64_t record = record_at(s, j);
    const unsigned char* r = base_ + record;
    SequenceData d;
    uint32_t samples;
    std::memcpy(&samples, r, 4);
    d.number_of_samples = samples;
    if (stream.storage == StorageFormat::kDense) {
      d.values = r + 4;
    } else {
      // The record's extent was checked when the chunk was parsed; its content is checked here, just before
      // it is handed out (and read, so the check costs no extra trip to memory).
      uint32_t nnz;
      std::memcpy(&nnz, r + 4, 4);
      d.total_nnz = nnz;
      d.values = r + 8;
      const uint64_t indices_at = record + 8 + uint64_t{nnz} * stream.element_size;
      const uint64_t counts_at = indices_at + 4 * uint64_t{nnz};
      d.indices = reinterpret_cast<const int32_t*>(base_ + indices_at);
      d.nnz_counts = reinterpret_cast<const uint32_t*>(base_ + counts_at);
      uint64_t sum = 0;
      const uint32_t negative = first_negative(d.nnz_counts, samples, sum);
      if (negative < samples) {
        fail(s, j, counts_at + 4 * uint64_t{negative},
             "Sample " + str(negative) + " of sequence " + str(j) + " of chunk " + str(index_) +
                 " has a negative nnz count " + std::to_string(static_cast<int32_t>(d.nnz_counts[negative])) +
                 ".");
      }
      if (sum != nnz) {
        fail(s, j, counts_at,
             "The per-sample nnz counts of sequence " + str(j) + " of chunk " + str(index_) + " add up to " +
                 str(sum) + ", but its nnz is " + str(nnz) + ".");
      }
      const uint32_t bad = first_out_of_range(d.indices, nnz, static_cast<uint32_t>(stream.dim));
      if (bad < nnz) {
        fail(s, j, indices_at + 4 * uint64_t{bad},
             "Row index " + std::to_string(d.indices[bad]) + " of sequence " + str(j) + " of chunk " +
                 str(index_) + " is outside the dimension " + str(stream.dim) + " of sparse input '" +
                 stream.name + "'.");
      }
    }
    if (realigned_[s] && realigned_[s][j] != nullptr) d.values = realigned_[s][j];
    out.push_back(d);
  }
}

void CurrentChunk::prefetch_sequence(uint32_t index_in_chunk) const {
  if (index_in_chunk >= sequences_) return;
  constexpr uint64_t kLine = 64;
  constexpr uint64_t kHeadBytes = 8 * kLine;  // a short record whole; of a long one, what is read first
  for (size_t s = 0; s < streams_.size(); ++s) {
    const uint64_t begin = record_at(s, index_in_chunk);
    // Records lie stream after stream, sequence after sequence: the next one ends this one.
    uint64_t end = size_;
    if (index_in_chunk + 1 < sequences_) {
      end = record_at(s, index_in_chunk + 1);
    } else if (s + 1 < streams_.size()) {
      end = record_at(s + 1, 0);
    }
    if (end <= begin) continue;
    const unsigned char* p = base_ + begin;
    const uint64_t head = std::min(end - begin, kHeadBytes);
    for (uint64_t at = 0; at < head; at += kLine) __builtin_prefetch(p + at);
    if (streams_[s].storage == StorageFormat::kSparseCsc && end - begin > kHeadBytes) {
      __builtin_prefetch(base_ + end - 1);  // the per-sample counts end the record
      if (end - begin > kHeadBytes + kLine) __builtin_prefetch(base_ + end - 1 - kLine);
    }
  }
}

std::shared_ptr<CurrentChunk> parse_current_chunk(const ChunkContext& context, uint32_t index,
                                                  uint64_t first_sequence) {
  const CbfHeader& header = *context.header;
  const CbfChunkHeader& info = header.chunks[index];
  const uint32_t n = info.sequences;
  const auto* base = reinterpret_cast<const unsigned char*>(context.mapping->data()) + info.offset;
  auto chunk = std::make_shared<CurrentChunk>(context, index, first_sequence);
  populate(base, info.size);
  Cursor c(*context.file, base, info.size, info.offset, limit_of(index, info));
  const unsigned char* lengths =
      c.take(uint64_t{4} * n, "the sequence lengths");  // their sum is checked by read_current_lengths
  std::vector<uint32_t> longest(n, 0);                  // samples of each sequence's longest input
  for (size_t s = 0; s < header.streams.size(); ++s) {
    const CbfStreamHeader& stream = header.streams[s];
    const uint64_t esize = element_size(stream.element_type);
    const bool is_double = stream.element_type == ElementType::kDouble;
    const bool dense = stream.storage == StorageFormat::kDense;
    HeaderPrefetcher prefetcher(lengths, n, base + info.size, dense ? 4 : 8);
    for (uint32_t j = 0; j < n; ++j) {
      prefetcher.at(j, c.here());
      const uint64_t key = first_sequence + j;
      const uint64_t record = c.position();
      chunk->set_record(s, j, record);
      const uint64_t record_at = c.offset();
      const uint32_t samples = c.u32("a sequence's sample count");
      longest[j] = std::max(longest[j], samples);
      if (dense) {
        const uint64_t sample_bytes = stream.dim * esize;
        if (samples > c.remaining() / sample_bytes) {
          fail_sequence(context, record_at, stream, key,
                        "Sequence " + str(j) + " of chunk " + str(index) + " claims " + str(samples) +
                            " samples of " + str(sample_bytes) + " bytes for dense input '" + stream.name +
                            "', more than the " + str(c.remaining()) + " bytes left in the chunk.");
        }
        const unsigned char* values = c.take(samples * sample_bytes, "dense values");
        if (is_double && samples > 0 && is_misaligned(values, stream.element_type)) {
          const size_t count = samples * stream.dim;
          double* copy = chunk->allocate_realigned(count);
          std::memcpy(copy, values, count * sizeof(double));
          chunk->set_realigned(s, j, copy);
        }
      } else {
        const uint64_t nnz_at = c.offset();
        const uint32_t nnz = c.u32("a sequence's nnz count");
        if (nnz > c.remaining() / (esize + 4) ||
            uint64_t{samples} > (c.remaining() - uint64_t{nnz} * (esize + 4)) / 4) {
          fail_sequence(context, nnz_at, stream, key,
                        "Sequence " + str(j) + " of chunk " + str(index) + " claims nnz " + str(nnz) +
                            " and " + str(samples) + " samples for sparse input '" + stream.name +
                            "', more than the " + str(c.remaining()) + " bytes left in the chunk.");
        }
        const unsigned char* values =
            c.take(uint64_t{nnz} * esize + uint64_t{nnz} * 4 + uint64_t{samples} * 4, "a sparse record");
        if (is_double && nnz > 0 && is_misaligned(values, stream.element_type)) {
          double* copy = chunk->allocate_realigned(nnz);
          std::memcpy(copy, values, uint64_t{nnz} * sizeof(double));
          chunk->set_realigned(s, j, copy);
        }
      }
      prefetcher.learn(j, c.position() - record);
    }
  }
  // A length counts samples for the schedulers: it may not claim more than the records hold (nor nothing
  // for a sequence that holds samples), else sweeps and epochs count samples that are not there.
  for (uint32_t j = 0; j < n; ++j) {
    uint32_t length;
    std::memcpy(&length, lengths + 4 * uint64_t{j}, 4);
    if (length > longest[j] || length == 0) {
      SourceLocation where;
      where.file = *context.file;
      where.byte_offset = info.offset + 4 * uint64_t{j};
      where.sequence_key = std::to_string(first_sequence + j);
      // A sequence without samples in any input: CNTK's reader took it and its packer then failed on it.
      if (longest[j] == 0) throw FormatError("Sequences must be at least one frame long.", where);
      throw FormatError("Sequence " + str(j) + " of chunk " + str(index) + " has length " + str(length) +
                            ", but its longest input holds " + str(longest[j]) +
                            " samples; a length lies between 1 and the samples of the longest input.",
                        where);
    }
  }
  check_no_bytes_left(context, index, c);
  return chunk;
}

void LegacyChunk::get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const {
  if (index_in_chunk >= sequences_) {
    throw UsageError("Chunk " + str(index_) + " of the CBF file '" + file_ + "' has " + str(sequences_) +
                     " sequences; sequence " + str(index_in_chunk) + " does not exist.");
  }
  const uint32_t j = index_in_chunk;
  for (const Stream& s : streams) {
    SequenceData d;
    if (s.storage == StorageFormat::kDense) {
      d.number_of_samples = 1;
      d.values = s.values + j * s.sample_bytes;
    } else {
      int32_t begin, end;
      std::memcpy(&begin, s.starts + 4 * uint64_t{j}, 4);
      std::memcpy(&end, s.starts + 4 * (uint64_t{j} + 1), 4);
      d.number_of_samples = s.first_count[j + 1] - s.first_count[j];
      d.total_nnz = static_cast<size_t>(end - begin);
      d.values = s.values + static_cast<uint64_t>(begin) * s.element_size;
      d.indices = s.indices.data() + begin;
      d.nnz_counts = s.counts.data() + s.first_count[j];
    }
    out.push_back(d);
  }
}

std::shared_ptr<LegacyChunk> parse_legacy_chunk(const ChunkContext& context, uint32_t index,
                                                uint64_t first_sequence, std::vector<uint32_t>& lengths) {
  const CbfHeader& header = *context.header;
  const CbfChunkHeader& info = header.chunks[index];
  const uint32_t n = info.sequences;
  auto chunk = std::make_shared<LegacyChunk>(context, index, n);
  const auto* base = reinterpret_cast<const unsigned char*>(context.mapping->data()) + info.offset;
  Cursor c(*context.file, base, info.size, info.offset, limit_of(index, info));
  lengths.assign(n, 1);
  // The per-sample count arrays are sized by the row indices, not by bytes of the file: they are bounded so
  // that no allocation exceeds the file.
  const uint64_t max_counts = std::min<uint64_t>(header.file_size / 4, 0xFFFFFFFFu);
  for (size_t s = 0; s < header.streams.size(); ++s) {
    const CbfStreamHeader& stream = header.streams[s];
    const uint32_t esize = static_cast<uint32_t>(element_size(stream.element_type));
    LegacyChunk::Stream& out = chunk->streams.emplace_back();
    out.storage = stream.storage;
    out.element_size = esize;
    // Values are views into the file; an array at an address not divisible by its element size (legacy
    // headers hold names of any length) is copied. (This copied 8 bytes per float value, reading past the
    // end of the values, and of the file.)
    auto keep_values = [&out, &stream, esize](const unsigned char* values, uint64_t count) {
      out.values = values;
      if (count > 0 && is_misaligned(values, stream.element_type)) {
        const uint64_t bytes = count * esize;
        out.realigned.resize((bytes + sizeof(double) - 1) / sizeof(double));
        std::memcpy(out.realigned.data(), values, bytes);
        out.values = reinterpret_cast<const unsigned char*>(out.realigned.data());
      }
    };
    if (stream.storage == StorageFormat::kDense) {
      // Every sequence is one sample: n * dim values (the header check guarantees they fit).
      out.sample_bytes = stream.dim * esize;
      keep_values(c.take(n * out.sample_bytes, "dense values"), n * stream.dim);
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
    keep_values(c.take(nnz * esize, "sparse values"), nnz);
    const uint64_t rows_at = c.offset();
    const unsigned char* rows_bytes = c.take(nnz * 4, "sparse row indices");
    const uint64_t starts_at = c.offset();
    out.starts = c.take(uint64_t{4} * (n + 1), "column starts");
    auto row_of = [rows_bytes](uint64_t k) {
      int32_t v;
      std::memcpy(&v, rows_bytes + 4 * k, 4);
      return v;
    };
    auto start_of = [&out](uint64_t k) {
      int32_t v;
      std::memcpy(&v, out.starts + 4 * k, 4);
      return v;
    };
    if (start_of(0) != 0 || static_cast<uint64_t>(start_of(n)) != nnz) {
      c.error_at(starts_at, "The column starts of sparse input '" + stream.name + "' of chunk " + str(index) +
                                " must begin with 0 and end with nnz " + str(nnz) + " (they are " +
                                std::to_string(start_of(0)) + " and " + std::to_string(start_of(n)) + ").");
    }
    // Pass 1: check the columns and row indices, and count each sequence's samples.
    out.first_count.resize(uint64_t{n} + 1);
    out.first_count[0] = 0;
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
      const auto samples = static_cast<uint32_t>(std::max<int64_t>(1, last_sample + 1));
      total_counts += samples;
      if (total_counts > max_counts) {
        fail_sequence(context, rows_at + 4 * static_cast<uint64_t>(std::max(end - 1, 0)), stream,
                      first_sequence + j,
                      "The row indices of sparse input '" + stream.name + "' of chunk " + str(index) +
                          " place entries at sample " + str(samples - 1) +
                          ", more samples than the file can describe.");
      }
      out.first_count[j + 1] = static_cast<uint32_t>(total_counts);
      lengths[j] = std::max(lengths[j], samples);
    }
    // Pass 2: the chunk's own index and count arrays (row mod dim, entries per sample).
    out.indices.resize(nnz);
    out.counts.assign(total_counts, 0);
    for (uint32_t j = 0; j < n; ++j) {
      const int32_t begin = start_of(j);
      const int32_t end = start_of(j + 1);
      for (int32_t k = begin; k < end; ++k) {
        const auto row = static_cast<uint64_t>(row_of(static_cast<uint64_t>(k)));
        out.indices[static_cast<size_t>(k)] = static_cast<int32_t>(row % stream.dim);
        ++out.counts[out.first_count[j] + row / stream.dim];
      }
    }
  }
  check_no_bytes_left(context, index, c);
  uint64_t sum = 0;
  for (uint32_t length : lengths) sum += length;
  check_length_sum(context, index, sum, "The sequences' sample counts");
  return chunk;
}

}  // namespace cntkio::cbf
