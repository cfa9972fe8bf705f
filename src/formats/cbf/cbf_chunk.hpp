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

/// A parsed legacy chunk: per stream and sequence a view into the mapping or into memory the chunk owns
/// (legacy sparse indices and counts, realigned double values).
class CbfChunk final : public Chunk {
 public:
  CbfChunk(std::shared_ptr<const core::MappedFile> mapping, size_t streams, uint32_t sequences)
      : mapping_(std::move(mapping)), streams_(streams), sequences_(sequences), views_(streams * sequences) {}

  void get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const override;

  SequenceData& view(size_t stream, uint32_t sequence) { return views_[stream * sequences_ + sequence]; }
  uint32_t sequences() const { return sequences_; }

  /// Memory owned by the chunk.
  std::vector<double> realigned;                  ///< double values whose place in the file is not 8-aligned
  std::vector<std::vector<int32_t>> indices;      ///< legacy: sparse row indices (row mod dim)
  std::vector<std::vector<uint32_t>> nnz_counts;  ///< legacy: per-sample nnz counts

 private:
  std::shared_ptr<const core::MappedFile> mapping_;
  size_t streams_;
  uint32_t sequences_;
  std::vector<SequenceData> views_;  // [stream][sequence]
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

  /// Record start (bytes from the chunk's first byte) of `sequence` in `stream`.
  uint64_t& record(size_t stream, uint32_t sequence) { return records_[stream * sequences_ + sequence]; }
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

  std::shared_ptr<const core::MappedFile> mapping_;
  const unsigned char* base_;
  std::string file_;
  uint64_t offset_;  // file offset of base_
  uint32_t index_;
  uint64_t first_sequence_;
  uint32_t sequences_;
  std::vector<Stream> streams_;
  std::unique_ptr<uint64_t[]> records_;                      // [stream][sequence]
  std::vector<std::unique_ptr<const double*[]>> realigned_;  // per stream, null unless needed
  std::vector<std::unique_ptr<double[]>> realigned_blocks_;
};

/// Parses chunk `index` (index into header->chunks) of a current-layout file. `first_sequence` is the
/// global index of its first sequence (for messages). Throws FormatError.
std::shared_ptr<CurrentChunk> parse_current_chunk(const ChunkContext& context, uint32_t index,
                                                  uint64_t first_sequence);

/// Reads the scheduling lengths (length prefix) of chunk `index` of a current-layout file and checks that
/// they add up to the chunk table's sample count. Throws FormatError.
void read_current_lengths(const ChunkContext& context, uint32_t index, std::vector<uint32_t>& lengths);

/// Parses chunk `index` of a legacy v1 file; `lengths` receives each sequence's scheduling length
/// (max(1, samples of any stream)). Throws FormatError.
std::shared_ptr<CbfChunk> parse_legacy_chunk(const ChunkContext& context, uint32_t index,
                                             uint64_t first_sequence, std::vector<uint32_t>& lengths);

}  // namespace cntkio::cbf
