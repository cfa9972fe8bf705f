#include "pipeline/no_randomizer.hpp"

#include <algorithm>
#include <string>

#include "cntkio/errors.hpp"
#include "pipeline/randomizer_common.hpp"

namespace cntkio::pipeline {

NoRandomizer::NoRandomizer(std::shared_ptr<Deserializer> deserializer, size_t max_invalid_sequences,
                           std::shared_ptr<core::ThreadPool> pool, std::shared_ptr<StageTimes> times)
    : deserializer_(std::move(deserializer)),
      chunks_(non_empty_chunks(*deserializer_)),
      cleaner_(max_invalid_sequences),
      sweep_samples_(pipeline::sweep_size(chunks_)),
      epoch_end_(sweep_samples_),
      prefetch_depth_(pool ? pool->size() : 0),
      loader_(deserializer_, std::move(pool), std::move(times)) {
  size_t samples = 0;
  size_t sequences = 0;
  for (const ChunkInfo& c : chunks_) {
    chunk_sample_start_.push_back(samples);
    chunk_sequence_start_.push_back(sequences);
    samples += c.number_of_samples;
    sequences += c.number_of_sequences;
  }
  enter_chunk(0);
  set_current_sample_position(0);
}

void NoRandomizer::start_epoch(const EpochConfiguration& config) {
  check_workers(config);
  const size_t size = epoch_size_in_samples(config, sweep_samples_);
  num_workers_ = config.num_workers;
  worker_rank_ = config.worker_rank;
  allow_cross_ = config.allow_minibatches_to_cross_sweeps;
  set_current_sample_position(size * config.epoch_index);
  epoch_end_ = size * (config.epoch_index + 1);
}

void NoRandomizer::set_configuration(const EpochConfiguration& config) {
  check_workers(config);
  num_workers_ = config.num_workers;
  worker_rank_ = config.worker_rank;
  allow_cross_ = config.allow_minibatches_to_cross_sweeps;
}

void NoRandomizer::enter_chunk(size_t chunk) {
  chunk_ = chunk;
  sequence_in_chunk_ = 0;
  sequences_.clear();
  sequences_.reserve(chunks_[chunk].number_of_sequences);
  deserializer_->sequence_infos_for_chunk(chunks_[chunk].id, sequences_);
  check_chunk_listing(chunks_[chunk].id, chunks_[chunk].number_of_sequences, chunks_[chunk].number_of_samples,
                      sequences_);
}

void NoRandomizer::move_to_next_sequence() {
  if (++sequence_in_chunk_ < sequences_.size()) return;
  enter_chunk(chunk_ + 1 == chunks_.size() ? 0 : chunk_ + 1);
}

void NoRandomizer::set_current_sample_position(size_t position) {
  const size_t offset = position % sweep_samples_;
  const size_t chunk =
      static_cast<size_t>(std::upper_bound(chunk_sample_start_.begin(), chunk_sample_start_.end(), offset) -
                          chunk_sample_start_.begin() - 1);
  if (chunk != chunk_) {
    enter_chunk(chunk);
  } else {
    sequence_in_chunk_ = 0;
  }
  const size_t offset_in_chunk = offset - chunk_sample_start_[chunk];
  size_t skipped = 0;
  // Stops at the first sequence starting at or after the offset; that may be the next chunk's first.
  while (skipped < offset_in_chunk) {
    skipped += sequences_[sequence_in_chunk_].number_of_samples;
    move_to_next_sequence();
  }
  position_ = position - offset_in_chunk + skipped;
  global_sequence_ = chunk_sequence_start_[chunk_] + sequence_in_chunk_;
  load_alone_next_ = true;
}

void NoRandomizer::restore(const EnumeratorState& state) {
  set_current_sample_position(state.position);
  // A CNTK checkpoint holds no counter: CNTK's SetState takes the sequence's index within its sweep, which
  // set_current_sample_position has set (in the first sweep, the counter of an uninterrupted run).
  if (state.sequence_counter != EnumeratorState::kCounterUnknown) global_sequence_ = state.sequence_counter;
}

void NoRandomizer::skip_delivered(const DeliveredBefore& delivered) {
  delivered_ = delivered;
  delivered_until_ = 0;
  for (size_t p : delivered_.positions) delivered_until_ = std::max(delivered_until_, p);
}

Sequences NoRandomizer::get_next_sequences(size_t global_sample_count, size_t local_sample_count) {
  check_budgets(global_sample_count, local_sample_count);
  Sequences result = spare_sequences_.take(deserializer_->streams().size());
  if (position_ >= epoch_end_) {
    result.end_of_epoch = true;
    result.end_of_sweep = position_ >= sweep_samples_ && position_ % sweep_samples_ == 0;
    return result;
  }
  if (!allow_cross_) {
    global_sample_count = std::min(global_sample_count, sweep_samples_ - position_ % sweep_samples_);
  }
  size_t global = 0;
  size_t local = 0;
  bool at_least_one = true;
  const size_t sweep = position_ / sweep_samples_;
  taken_.clear();
  while (global < global_sample_count && local < local_sample_count) {
    const SequenceInfo& s = sequences_[sequence_in_chunk_];
    bool is_local = global_sequence_ % num_workers_ == worker_rank_;
    if (is_local && position_ < delivered_until_ &&
        position_ < delivered_.positions[global_sequence_ % delivered_.positions.size()]) {
      is_local = false;  // an earlier run's worker delivered it
    }
    if (!at_least_one) {
      if (global + s.number_of_samples > global_sample_count) break;
      if (is_local && local + s.number_of_samples > local_sample_count) break;
    }
    if (position_ >= epoch_end_) {
      result.end_of_epoch = true;
      result.end_of_sweep = sweep != position_ / sweep_samples_;
      break;
    }
    if (is_local) {
      taken_.push_back({chunks_[chunk_].id, s.index_in_chunk, s.key});
      local += s.number_of_samples;
      at_least_one = false;
    }
    global += s.number_of_samples;
    position_ += s.number_of_samples;
    ++global_sequence_;
    move_to_next_sequence();
  }
  result.end_of_epoch |= position_ >= epoch_end_;
  result.end_of_sweep |= sweep != position_ / sweep_samples_;

  const bool alone = load_alone_next_ && prefetch_depth_ > 0 && deserializer_->loads_sequences_alone();
  load_alone_next_ = false;
  if (alone) load_alone_what_is_loading();
  if (defer_fetch_) {
    result.fetch_chunks.reserve(taken_.size());
    result.fetch_indices.reserve(taken_.size());
    result.keys.reserve(taken_.size());
    result.chunk_ids.reserve(taken_.size());
  }
  // Deferring, the sequences' chunks stay in `result` (a chunk released here lives until they are fetched).
  auto take = [&](const ChunkPtr& chunk, const Taken& t) {
    if (defer_fetch_) {
      defer_sequence(result, chunk, t.chunk_id, t.index_in_chunk, t.key);
    } else {
      append_sequence(result, chunk, t.chunk_id, t.index_in_chunk, t.key, scratch_);
    }
  };
  for (const Taken& t : taken_) {
    if (!alone_.empty()) {
      const auto a = std::find_if(alone_.begin(), alone_.end(),
                                  [&](const AloneLoad& x) { return x.chunk_id == t.chunk_id; });
      if (a != alone_.end() && a->chunk) {
        take(a->chunk, t);
        continue;
      }
    }
    if (!cached_chunk_ || cached_chunk_id_ != t.chunk_id) {
      if (cached_chunk_) {
        cached_chunk_.reset();  // release before loading the next one
        loader_.retain_if([&](uint32_t id) { return id != cached_chunk_id_; });
      }
      cached_chunk_ = loader_.get(t.chunk_id);
      cached_chunk_id_ = t.chunk_id;
    }
    take(cached_chunk_, t);
  }
  prefetch_ahead(1);
  // After sequences loaded alone the chunks start loading at the next call, which comes once this
  // minibatch is handed over (ReadAhead): started now, they would take the cores while the caller waits.
  if (alone_.empty()) loader_.flush();
  alone_.clear();
  if (!defer_fetch_) cleaner_.clean(result, *deserializer_);
  return result;
}

// Chunks are read in file order: starts loading the current chunk's successors from the `first`-th (0: the
// current one) while the consumer works, as many as the pool has threads, but none that starts at or after
// the epoch's end: a chunk loaded for a sweep that is not read would be parsed for nothing, and its errors
// counted (CNTK counts them at each parse) for data never delivered.
void NoRandomizer::prefetch_ahead(size_t first) {
  const size_t n = chunks_.size();
  const size_t sweep_start = position_ - position_ % sweep_samples_;
  for (size_t k = first; k <= prefetch_depth_ && k < n; ++k) {
    const size_t c = (chunk_ + k) % n;
    const size_t start = sweep_start + chunk_sample_start_[c] + (chunk_ + k >= n ? sweep_samples_ : 0);
    if (start >= epoch_end_) break;
    loader_.prefetch(chunks_[c].id);
  }
}

// The first minibatch from a new position (the reader's start, an epoch's, a restore) takes its sequences
// alone where the deserializer can (Deserializer::load_sequences), while their chunks load in the
// background, instead of waiting for a whole chunk to be parsed (a 32 MB CTF chunk: tens of milliseconds,
// and over HTTP its whole transfer). As in the block randomizer, a sequence the deserializer cannot load
// alone waits for its chunk, whose load reports what it has to, and the data delivered is the same.
void NoRandomizer::load_alone_what_is_loading() {
  alone_.clear();
  for (const Taken& t : taken_) {
    if (cached_chunk_ && t.chunk_id == cached_chunk_id_) continue;
    auto a = std::find_if(alone_.begin(), alone_.end(),
                          [&](const AloneLoad& x) { return x.chunk_id == t.chunk_id; });
    if (a == alone_.end()) {
      loader_.prefetch(t.chunk_id);
      a = alone_.insert(alone_.end(), AloneLoad{t.chunk_id, {}, nullptr});
    }
    a->indices.push_back(t.index_in_chunk);
  }
  if (alone_.empty()) return;
  // The chunks are asked for now and start loading once these sequences are loaded: the minibatch waits
  // for them alone, not for the cores or the network the loads would take meanwhile.
  prefetch_ahead(0);
  sequences_loaded_alone_ +=
      load_alone(*deserializer_, alone_, [this](uint32_t chunk_id) { return loader_.loading(chunk_id); });
}

}  // namespace cntkio::pipeline
