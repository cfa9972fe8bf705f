// Pieces shared by BlockRandomizer and NoRandomizer: epoch sizes, configuration checks, filling Sequences.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline {

/// The chunks of `deserializer` that hold at least one sequence, in id order. Throws Error if there is no
/// data at all (CNTK fails on empty chunks; we skip them, which changes nothing where CNTK works).
std::vector<ChunkInfo> non_empty_chunks(const Deserializer& deserializer);

/// Sweep size S: the sum of the chunks' scheduling lengths.
size_t sweep_size(const std::vector<ChunkInfo>& chunks);

/// Epoch size E in samples from `config` and the sweep size (§4); throws UsageError if it is 0, above
/// SIZE_MAX / 2, or if the epoch's end would not fit in size_t.
size_t epoch_size_in_samples(const EpochConfiguration& config, size_t sweep_samples);

/// Throws UsageError unless 1 <= num_workers and worker_rank < num_workers.
void check_workers(const EpochConfiguration& config);

/// Throws UsageError unless both budgets are at least 1.
void check_budgets(size_t global_sample_count, size_t local_sample_count);

/// Appends sequence `index_in_chunk` of `chunk` to `out`, and `chunk` to out.chunks unless it is there;
/// `scratch` is reused between calls.
void append_sequence(Sequences& out, const ChunkPtr& chunk, uint32_t chunk_id, uint32_t index_in_chunk,
                     const SequenceKey& key, std::vector<SequenceData>& scratch);
/// The same without touching out.chunks: the caller keeps the chunk there (keep_chunk), once per chunk
/// rather than once per sequence.
void append_sequence(Sequences& out, const Chunk& chunk, uint32_t chunk_id, uint32_t index_in_chunk,
                     const SequenceKey& key, std::vector<SequenceData>& scratch);
/// The data of sequence `index_in_chunk` of `chunk`, appended to out.data (keys and chunk ids are there).
void fetch_sequence(Sequences& out, const Chunk& chunk, uint32_t chunk_id, uint32_t index_in_chunk,
                    std::vector<SequenceData>& scratch);
/// Adds `chunk` to out.chunks unless it is there.
void keep_chunk(Sequences& out, const ChunkPtr& chunk);
/// Records a sequence whose data fetch_deferred() fills later (SequenceEnumerator::defer_fetch), keeping its
/// chunk in `out`.
void defer_sequence(Sequences& out, const ChunkPtr& chunk, uint32_t chunk_id, uint32_t index_in_chunk,
                    const SequenceKey& key);
/// Results handed back (SequenceEnumerator::recycle), their vectors emptied but their memory kept, for the
/// next results: up to 256 KiB of them, as many as a read-ahead group of small minibatches plans (a larger
/// result's memory is given back). One thread.
class SequencesPool {
 public:
  /// An empty result with `streams` streams, from a recycled one when there is one.
  Sequences take(size_t streams);
  void give(Sequences&& used);

 private:
  static constexpr size_t kMostBytes = 256 << 10;
  static size_t bytes_of(const Sequences& s);
  std::vector<Sequences> kept_;
  size_t kept_bytes_ = 0;
};

/// SequenceEnumerator::fetch for the randomizers: the data of the sequences recorded for later (from any
/// thread, for several results at once), then the invalid ones removed.
void fetch_deferred(Sequences& sequences);

/// Sequences of a chunk that is still loading, to take alone (Deserializer::load_sequences) for a minibatch
/// that should not wait for the whole chunk.
struct AloneLoad {
  uint32_t chunk_id;
  std::vector<uint32_t> indices;  // in the chunk
  ChunkPtr chunk;                 // null: not loaded alone (the chunk's own load reports why)
};

/// Loads the sequences of each of `loads` whose chunk `still_loading` says is: its indices are sorted and
/// made unique first (a minibatch may take a sequence's index twice across a sweep's end). Returns how many
/// sequences were loaded alone.
uint64_t load_alone(Deserializer& deserializer, std::vector<AloneLoad>& loads,
                    const std::function<bool(uint32_t)>& still_loading);

/// Throws Error unless the sequences `listed` for chunk `chunk_id` agree with its description: as many
/// sequences, each of at least one sample, adding up to its samples. (A deserializer whose chunk samples
/// exceed its sequences' would make a sweep wait forever for samples that never come.)
void check_chunk_listing(uint32_t chunk_id, size_t described_sequences, size_t described_samples,
                         const std::vector<SequenceInfo>& listed);

/// Loads a chunk, checking that the deserializer returned one.
ChunkPtr load_chunk_checked(Deserializer& deserializer, uint32_t chunk_id);

}  // namespace cntkio::pipeline
