#include "pipeline/chunk_cache.hpp"

#include "cntkio/env.hpp"
#include "cntkio/errors.hpp"

namespace cntkio::pipeline {

CachingDeserializer::CachingDeserializer(std::shared_ptr<Deserializer> inner, uint64_t budget_bytes)
    : ForwardingDeserializer(std::move(inner)), budget_(budget_bytes) {
  seen_ = inner_->input_files();
  enabled_ = budget_ > 0 && !seen_.empty();
}

uint64_t CachingDeserializer::tolerated_errors() const {
  SkipReport report;
  inner_->add_skips(report);
  return report.errors + report.rows_skipped + report.samples_skipped;
}

bool CachingDeserializer::inputs_unchanged() const {
  for (const InputFileVersion& file : seen_) {
    try {
      if (Env::current()->file_identity(file.path) != file.identity) return false;
    } catch (const IoError&) {
      return false;  // gone: the deserializer says what that means
    }
  }
  return true;
}

void CachingDeserializer::drop_all() {
  entries_.clear();
  bytes_ = 0;
  ++invalidations_;
  // Chunks kept from now on are parsed from the files as they are now.
  for (InputFileVersion& file : seen_) {
    try {
      file.identity = Env::current()->file_identity(file.path);
    } catch (const IoError&) {
      file.identity = FileIdentity{};  // never equal to an existing file's: nothing kept survives a check
    }
  }
}

ChunkPtr CachingDeserializer::load_chunk(uint32_t chunk_id) {
  if (!enabled_) return inner_->load_chunk(chunk_id);
  uint64_t drops_before = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(chunk_id);
    if (it != entries_.end()) {
      if (it->second.used_in_check == check_period_) {
        // Asked for twice since the last check: a new sweep (or a restore) reuses the cache.
        ++check_period_;
        if (!inputs_unchanged()) drop_all();
        it = entries_.find(chunk_id);
      }
      if (it != entries_.end()) {
        it->second.used_in_check = check_period_;
        ++hits_;
        return it->second.chunk;
      }
    }
    ++misses_;
    drops_before = invalidations_;
  }
  const uint64_t errors_before = tolerated_errors();
  ChunkPtr chunk = inner_->load_chunk(chunk_id);
  if (!chunk) return chunk;
  // A chunk loaded while any load counted a tolerated error is not kept (see the header).
  if (tolerated_errors() != errors_before) return chunk;
  const uint64_t bytes = data_bytes(*chunk, chunk_id);
  std::lock_guard<std::mutex> lock(mutex_);
  // A load that began before the cache was dropped may have read the files as they were before.
  if (invalidations_ == drops_before && bytes <= budget_ - bytes_ && entries_.count(chunk_id) == 0) {
    entries_.emplace(chunk_id, Entry{chunk, bytes, check_period_});
    bytes_ += bytes;
  }
  return chunk;
}

uint64_t CachingDeserializer::data_bytes(const Chunk& chunk, uint32_t chunk_id) const {
  std::vector<SequenceInfo> sequences;
  inner_->sequence_infos_for_chunk(chunk_id, sequences);
  const std::vector<StreamInfo>& streams = inner_->streams();
  std::vector<SequenceData> data;
  uint64_t bytes = 0;
  for (const SequenceInfo& s : sequences) {
    data.clear();
    chunk.get_sequence(s.index_in_chunk, data);
    for (size_t i = 0; i < data.size() && i < streams.size(); ++i) {
      const SequenceData& d = data[i];
      const uint64_t value_bytes = element_size(streams[i].element_type);
      if (d.native != nullptr) return UINT64_MAX;  // bytes a transform decodes: size unknown, never kept
      if (streams[i].storage == StorageFormat::kSparseCsc) {
        bytes +=
            d.total_nnz * (value_bytes + sizeof(int32_t)) + uint64_t{d.number_of_samples} * sizeof(uint32_t);
      } else {
        size_t dim = 1;
        for (size_t extent :
             d.sample_shape.empty() ? std::span<const size_t>(streams[i].sample_shape) : d.sample_shape) {
          dim *= extent;
        }
        bytes += uint64_t{d.number_of_samples} * dim * value_bytes;
      }
    }
  }
  return bytes;
}

SourceStats::ChunkCache CachingDeserializer::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SourceStats::ChunkCache s;
  s.budget_bytes = budget_;
  s.bytes = bytes_;
  s.chunks = entries_.size();
  s.hits = hits_;
  s.misses = misses_;
  s.invalidations = invalidations_;
  return s;
}

}  // namespace cntkio::pipeline
