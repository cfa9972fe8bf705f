// Parsing one chunk of a CBF file (either layout) into sequence views over the mapped file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cntkio/cbf.hpp"
#include "cntkio/sequence.hpp"
#include "core/mapped_file.hpp"

namespace cntkio::cbf {

/// What a chunk parse needs from its deserializer.
struct ChunkContext {
  const std::string* file = nullptr;                ///< path as configured (for messages)
  std::shared_ptr<const core::MappedFile> mapping;  ///< the whole file; loaded chunks keep it alive
  const CbfHeader* header = nullptr;
};

/// A parsed legacy chunk. Dense values and sparse values are views into the mapping (double arrays at an
/// address not divisible by 8 are copied); sparse row indices (row mod dim) and per-sample counts, which the
/// legacy layout does not store, are the chunk's own arrays.
class LegacyChunk final : public Chunk {
 public:
  struct Stream {
    StorageFormat storage = StorageFormat::kDense;
    uint32_t element_size = 4;
    uint64_t sample_bytes = 0;              ///< dense: bytes of one sequence (one sample)
    const unsigned char* values = nullptr;  ///< dense: all sequences; sparse: all entries
    const unsigned char* starts = nullptr;  ///< sparse: n + 1 int32 column starts (in the mapping)
    std::vector<int32_t> indices;           ///< sparse: index within the sample of each entry
    std::vector<uint32_t> counts;           ///< sparse: entries of each sample, sequence after sequence
    std::vector<uint32_t> first_count;      ///< sparse: n + 1 positions in `counts`
    std::vector<double> realigned;          ///< copy of the values when they are misaligned doubles
  };

  LegacyChunk(const ChunkContext& context, uint32_t index, uint32_t sequences)
      : mapping_(context.mapping), file_(*context.file), index_(index), sequences_(sequences) {}

  void get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const override;

  std::vector<Stream> streams;

 private:
  std::shared_ptr<const core::MappedFile> mapping_;
  std::string file_;
  uint32_t index_;
  uint32_t sequences_;
};

/// A parsed current-layout chunk. It keeps only where each record starts (8 bytes per stream and
/// sequence, all records checked when the chunk was parsed) and decodes a record's counts when its
/// sequence is asked for, so the values, indices and counts handed out are views into the mapping.
class CurrentChunk final : public Chunk {
 public:
  /// An empty chunk for chunk `index` of `context`'s file; parse_current_chunk fills in the records.
  CurrentChunk(const ChunkContext& context, uint32_t index, uint64_t first_sequence);

  /// Sparse records are checked here (counts non-negative and adding up to nnz, row indices below dim)
  /// before their views are handed out: FormatError otherwise.
  void get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const override;
  /// Starts loading the cache lines of the sequence's records (their headers, the first values and the
  /// per-sample counts at their ends), so that the misses of a minibatch's sequences overlap.
  void prefetch_sequence(uint32_t index_in_chunk) const override;

  /// Sets the record start (bytes from the chunk's first byte) of `sequence` in `stream`.
  void set_record(size_t stream, uint32_t sequence, uint64_t offset) {
    const size_t i = stream * sequences_ + sequence;
    if (wide_records_) {
      records64_[i] = offset;
    } else {
      records32_[i] = static_cast<uint32_t>(offset);
    }
  }
  /// Uses `values` (aligned copies the chunk owns) instead of the file's for `sequence` of `stream`.
  void set_realigned(size_t stream, uint32_t sequence, const double* values);
  /// Memory for realigned double values, which must stay in place: the chunk keeps the blocks.
  double* allocate_realigned(size_t count);

 private:
  struct Stream {
    std::string name;
    StorageFormat storage;
    uint32_t element_size;
    uint64_t dim;
  };
  [[noreturn]] void fail(size_t stream, uint32_t sequence, uint64_t offset, const std::string& message) const;
  uint64_t record_at(size_t stream, uint32_t sequence) const {
    const size_t i = stream * sequences_ + sequence;
    return wide_records_ ? records64_[i] : records32_[i];
  }

  std::shared_ptr<const core::MappedFile> mapping_;
  const unsigned char* base_;
  std::string file_;
  uint64_t offset_;  // file offset of base_
  uint64_t size_;    // bytes of the chunk
  uint32_t index_;
  uint64_t first_sequence_;
  uint32_t sequences_;
  std::vector<Stream> streams_;
  bool wide_records_;                                        // chunk larger than 4 GiB
  std::unique_ptr<uint32_t[]> records32_;                    // [stream][sequence], or
  std::unique_ptr<uint64_t[]> records64_;                    // the same for chunks larger than 4 GiB
  std::vector<std::unique_ptr<const double*[]>> realigned_;  // per stream, null unless needed
  std::vector<std::unique_ptr<double[]>> realigned_blocks_;
};

/// Parses chunk `index` (index into header->chunks) of a current-layout file. `first_sequence` is the
/// global index of its first sequence (for messages). Throws FormatError.
std::shared_ptr<CurrentChunk> parse_current_chunk(const ChunkContext& context, uint32_t index,
                                                  uint64_t first_sequence);

/// Reads the scheduling lengths (length prefix) of chunk `index` of a current-layout file and checks that
/// they add up to the chunk table's sample count, and that none is 0 ("Sequences must be at least one frame
/// long.", located; the chunk's first sequence is `first_sequence`). Throws FormatError.
/// parse_current_chunk checks each length against the records (at most the samples of the longest input)
/// and that the records fill the chunk.
void read_current_lengths(const ChunkContext& context, uint32_t index, uint64_t first_sequence,
                          std::vector<uint32_t>& lengths);

/// Parses chunk `index` of a legacy v1 file; `lengths` receives each sequence's scheduling length
/// (max(1, samples of any stream)), which must add up to the chunk table's sample count, and the records
/// must fill the chunk. Throws FormatError.
std::shared_ptr<LegacyChunk> parse_legacy_chunk(const ChunkContext& context, uint32_t index,
                                                uint64_t first_sequence, std::vector<uint32_t>& lengths);

}  // namespace cntkio::cbf
