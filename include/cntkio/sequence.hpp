/// @file
/// Sequences and chunks as deserializers describe and deliver them.
///
/// A deserializer first describes its data cheaply (ChunkInfo, SequenceInfo: counts, no values), then
/// loads one chunk at a time. A loaded Chunk hands out SequenceData views that point into the chunk's own
/// memory; holding the std::shared_ptr<Chunk> keeps them valid.
///
/// Thread-safety: a loaded Chunk is immutable; get_sequence may be called from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace cntkio {

/// Identity of a sequence. `sequence` is the numeric key (CTF: id or line number; string keys are mapped
/// to numbers by the reader's key table); `sample` is used only when frames are split out of a sequence.
struct SequenceKey {
  uint64_t sequence = 0;  ///< the numeric key of the sequence
  uint32_t sample = 0;    ///< frame index inside the sequence (frame mode), else 0
  /// Both fields equal.
  friend bool operator==(const SequenceKey&, const SequenceKey&) = default;
};

/// Description of one sequence, as indexed (no data).
struct SequenceInfo {
  uint32_t index_in_chunk = 0;     ///< position inside its chunk
  uint32_t number_of_samples = 0;  ///< scheduling length (what minibatch and epoch sizes count)
  uint32_t chunk_id = 0;           ///< chunk that holds it
  SequenceKey key;                 ///< its key
};

/// Description of one chunk, as indexed (no data).
struct ChunkInfo {
  uint32_t id = 0;                 ///< position among the deserializer's chunks (0, 1, ...)
  size_t number_of_samples = 0;    ///< sum of the scheduling lengths of its sequences
  size_t number_of_sequences = 0;  ///< sequences it holds
};

/// The data of one stream of one sequence: a view into chunk memory.
/// Dense: `values` holds number_of_samples * dim values of the stream's element type.
/// Sparse CSC: `values` and `indices` hold `total_nnz` entries, sample i owns `nnz_counts[i]` of them in
/// order.
struct SequenceData {
  uint32_t number_of_samples = 0;        ///< samples actually parsed for this stream
  const void* values = nullptr;          ///< float* or double* per the stream's element type
  const int32_t* indices = nullptr;      ///< sparse only: row index of each value
  const uint32_t* nnz_counts = nullptr;  ///< sparse only: number of entries of each sample
  size_t total_nnz = 0;                  ///< sparse only
  bool valid = true;                     ///< false if the data could not be produced (e.g. key missing)
  /// Optional shape of this sequence's samples (same convention as StreamInfo::sample_shape), for streams
  /// whose samples can differ in shape (images before a Scale transform). Empty: the stream's shape.
  /// The packer requires every sequence of a minibatch to agree (and to match a known stream shape).
  std::span<const size_t> sample_shape;
  /// Format-defined data (e.g. an image still to be decoded) that the format's own SequenceTransformer
  /// (cntkio/transform.hpp) turns into values; `values` is unused while it is set. The packer rejects it.
  const void* native = nullptr;
};

/// A loaded chunk.
class Chunk {
 public:
  virtual ~Chunk() = default;
  /// Appends one SequenceData per stream (in stream-id order) of sequence `index_in_chunk` to `out`.
  /// `index_in_chunk` must be one that sequence_infos_for_chunk listed for this chunk: the built-in chunks do
  /// not check it (this is the innermost loop of reading).
  virtual void get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const = 0;
  /// A hint that get_sequence(index_in_chunk) follows soon: a chunk may ask the cache for what it will read,
  /// so that the misses of many sequences overlap. It must not change anything; the default does nothing.
  virtual void prefetch_sequence(uint32_t index_in_chunk) const { (void)index_in_chunk; }
};

/// A loaded chunk; holding it keeps its SequenceData views valid.
using ChunkPtr = std::shared_ptr<const Chunk>;

}  // namespace cntkio
