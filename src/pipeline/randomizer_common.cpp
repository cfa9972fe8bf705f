#include "pipeline/randomizer_common.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "cntkio/errors.hpp"
#include "pipeline/sequence_cleaner.hpp"

namespace cntkio::pipeline {

std::vector<ChunkInfo> non_empty_chunks(const Deserializer& deserializer) {
  std::vector<ChunkInfo> chunks;
  for (const ChunkInfo& c : deserializer.chunk_infos()) {
    if (c.number_of_sequences > 0) chunks.push_back(c);
  }
  if (chunks.empty() || sweep_size(chunks) == 0) {
    throw Error("The input has no data: no chunk holds a sequence with at least one sample.",
                "(check the input files and the stream configuration).");
  }
  return chunks;
}

size_t sweep_size(const std::vector<ChunkInfo>& chunks) {
  size_t total = 0;
  for (const ChunkInfo& c : chunks) total += c.number_of_samples;
  return total;
}

size_t epoch_size_in_samples(const EpochConfiguration& config, size_t sweep_samples) {
  constexpr size_t kMax = std::numeric_limits<size_t>::max();
  size_t size = 0;
  if (config.total_epoch_size_in_sweeps != kInfinitelyRepeat) {
    if (config.total_epoch_size_in_sweeps != 0 && sweep_samples > kMax / config.total_epoch_size_in_sweeps) {
      throw UsageError("Epoch size of " + std::to_string(config.total_epoch_size_in_sweeps) + " sweeps of " +
                       std::to_string(sweep_samples) + " samples is too large; ask for fewer sweeps.");
    }
    size = sweep_samples * config.total_epoch_size_in_sweeps;
  } else if (config.total_epoch_size_in_samples == kRequestDataSize) {
    size = sweep_samples;
  } else {
    size = config.total_epoch_size_in_samples;
  }
  if (size == 0) {
    throw UsageError("Epoch size cannot be 0.", "(ask for at least one sample or one sweep).");
  }
  if (size > kMax / 2) {
    throw UsageError("Epoch size of " + std::to_string(size) + " samples is too large; at most " +
                     std::to_string(kMax / 2) + " samples (SIZE_MAX / 2, i.e. endless) are supported.");
  }
  if (config.epoch_index >= kMax / size) {
    throw UsageError("Epoch " + std::to_string(config.epoch_index) + " of " + std::to_string(size) +
                     " samples lies beyond the largest sample position; use a smaller epoch index or size.");
  }
  return size;
}

void check_workers(const EpochConfiguration& config) {
  if (config.num_workers == 0 || config.worker_rank >= config.num_workers) {
    throw UsageError("Invalid distribution: worker rank " + std::to_string(config.worker_rank) + " of " +
                     std::to_string(config.num_workers) +
                     " workers; the rank must be below the number of workers, which must be at least 1.");
  }
}

void check_budgets(size_t global_sample_count, size_t local_sample_count) {
  if (global_sample_count == 0 || local_sample_count == 0) {
    throw UsageError("Minibatch size cannot be 0; ask for at least one sample.");
  }
}

void append_sequence(Sequences& out, const Chunk& chunk, uint32_t chunk_id, uint32_t index_in_chunk,
                     const SequenceKey& key, std::vector<SequenceData>& scratch) {
  fetch_sequence(out, chunk, chunk_id, index_in_chunk, scratch);
  out.keys.push_back(key);
  out.chunk_ids.push_back(chunk_id);
}

void fetch_sequence(Sequences& out, const Chunk& chunk, uint32_t chunk_id, uint32_t index_in_chunk,
                    std::vector<SequenceData>& scratch) {
  scratch.clear();
  chunk.get_sequence(index_in_chunk, scratch);
  if (scratch.size() != out.data.size()) {
    throw Error("Chunk " + std::to_string(chunk_id) + " returned " + std::to_string(scratch.size()) +
                " stream items for sequence " + std::to_string(index_in_chunk) +
                " but the deserializer has " + std::to_string(out.data.size()) +
                " streams; the deserializer is inconsistent.");
  }
  for (size_t s = 0; s < scratch.size(); ++s) out.data[s].push_back(scratch[s]);
}

void keep_chunk(Sequences& out, const ChunkPtr& chunk) {
  if (std::find(out.chunks.begin(), out.chunks.end(), chunk) == out.chunks.end()) out.chunks.push_back(chunk);
}

void defer_sequence(Sequences& out, const ChunkPtr& chunk, uint32_t chunk_id, uint32_t index_in_chunk,
                    const SequenceKey& key) {
  keep_chunk(out, chunk);
  out.fetch_chunks.push_back(chunk.get());
  out.fetch_indices.push_back(index_in_chunk);
  out.keys.push_back(key);
  out.chunk_ids.push_back(chunk_id);
}

size_t SequencesPool::bytes_of(const Sequences& s) {
  size_t bytes = s.keys.capacity() * sizeof(SequenceKey) + s.chunk_ids.capacity() * sizeof(uint32_t) +
                 s.chunks.capacity() * sizeof(ChunkPtr) + s.fetch_chunks.capacity() * sizeof(const Chunk*) +
                 s.fetch_indices.capacity() * sizeof(uint32_t) +
                 s.invalid_removed.capacity() * sizeof(SequenceKey);
  for (const auto& stream : s.data) bytes += stream.capacity() * sizeof(SequenceData);
  return bytes;
}

Sequences SequencesPool::take(size_t streams) {
  Sequences out;
  if (!kept_.empty()) {
    out = std::move(kept_.back());
    kept_.pop_back();
    kept_bytes_ -= bytes_of(out);
  }
  out.data.resize(streams);
  return out;
}

void SequencesPool::give(Sequences&& used) {
  used.chunks.clear();  // released now, kept or not
  const size_t bytes = bytes_of(used);
  if (used.keys.capacity() == 0 || kept_bytes_ + bytes > kMostBytes) return;
  for (auto& stream : used.data) stream.clear();
  used.keys.clear();
  used.chunk_ids.clear();
  used.fetch_chunks.clear();
  used.fetch_indices.clear();
  used.invalid_removed.clear();
  used.end_of_sweep = false;
  used.end_of_epoch = false;
  kept_bytes_ += bytes;
  kept_.push_back(std::move(used));
}

void fetch_deferred(Sequences& sequences) {
  const size_t n = sequences.fetch_chunks.size();
  if (n == 0) return;
  if (sequences.fetch_indices.size() != n || sequences.keys.size() != n || sequences.chunk_ids.size() != n) {
    throw Error("The sequences to fetch do not match their keys.");
  }
  for (auto& stream : sequences.data) stream.reserve(stream.size() + n);
  // Asked for all at once, the sequences' cache misses overlap.
  for (size_t k = 0; k < n; ++k) sequences.fetch_chunks[k]->prefetch_sequence(sequences.fetch_indices[k]);
  thread_local std::vector<SequenceData> scratch;  // runs on several threads at once
  for (size_t k = 0; k < n; ++k) {
    fetch_sequence(sequences, *sequences.fetch_chunks[k], sequences.chunk_ids[k], sequences.fetch_indices[k],
                   scratch);
  }
  sequences.fetch_chunks.clear();
  sequences.fetch_indices.clear();
  SequenceCleaner::remove_invalid(sequences);
}

void append_sequence(Sequences& out, const ChunkPtr& chunk, uint32_t chunk_id, uint32_t index_in_chunk,
                     const SequenceKey& key, std::vector<SequenceData>& scratch) {
  append_sequence(out, *chunk, chunk_id, index_in_chunk, key, scratch);
  keep_chunk(out, chunk);
}

uint64_t load_alone(Deserializer& deserializer, std::vector<AloneLoad>& loads,
                    const std::function<bool(uint32_t)>& still_loading) {
  uint64_t loaded = 0;
  for (AloneLoad& a : loads) {
    std::sort(a.indices.begin(), a.indices.end());
    a.indices.erase(std::unique(a.indices.begin(), a.indices.end()), a.indices.end());
    if (!still_loading(a.chunk_id)) continue;  // loaded already, or finished meanwhile
    try {
      a.chunk = deserializer.load_sequences(a.chunk_id, a.indices);
    } catch (const Error&) {
      a.chunk = nullptr;  // the chunk's own load reports it
    }
    if (a.chunk) loaded += a.indices.size();
  }
  return loaded;
}

void check_chunk_listing(uint32_t chunk_id, size_t described_sequences, size_t described_samples,
                         const std::vector<SequenceInfo>& listed) {
  const std::string chunk = "Chunk " + std::to_string(chunk_id);
  const std::string inconsistent = "; the deserializer's index is inconsistent.";
  if (listed.size() != described_sequences) {
    throw Error(chunk + " lists " + std::to_string(listed.size()) +
                " sequences but its chunk description says " + std::to_string(described_sequences) +
                inconsistent);
  }
  size_t samples = 0;
  for (const SequenceInfo& s : listed) {
    if (s.number_of_samples == 0) {
      throw Error(chunk + " lists sequence " + std::to_string(s.key.sequence) + " with no sample" +
                  inconsistent);
    }
    samples += s.number_of_samples;
  }
  if (samples != described_samples) {
    throw Error(chunk + " lists sequences of " + std::to_string(samples) +
                " samples but its chunk description says " + std::to_string(described_samples) +
                inconsistent);
  }
}

ChunkPtr load_chunk_checked(Deserializer& deserializer, uint32_t chunk_id) {
  ChunkPtr chunk = deserializer.load_chunk(chunk_id);
  if (!chunk) throw Error("The deserializer returned no data for chunk " + std::to_string(chunk_id) + ".");
  return chunk;
}

}  // namespace cntkio::pipeline
