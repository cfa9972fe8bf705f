#include "pipeline/block_randomizer.hpp"

#include <algorithm>

#include "cntkio/env.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/skip_report.hpp"
#include "pipeline/randomizer_common.hpp"

namespace cntkio::pipeline {

BlockRandomizer::BlockRandomizer(std::shared_ptr<Deserializer> deserializer, size_t window,
                                 bool sample_based_window, uint64_t seed_offset, size_t max_invalid_sequences,
                                 std::shared_ptr<core::ThreadPool> pool, std::shared_ptr<StageTimes> times)
    : deserializer_(std::move(deserializer)),
      chunk_randomizer_(non_empty_chunks(*deserializer_), window, sample_based_window),
      sequence_randomizer_(*deserializer_, chunk_randomizer_, pool.get()),
      cleaner_(max_invalid_sequences),
      seed_offset_(seed_offset),
      sweep_samples_(chunk_randomizer_.total_samples()),
      num_chunks_(chunk_randomizer_.size()),
      epoch_size_(sweep_samples_),
      loader_(deserializer_, std::move(pool), std::move(times)) {}

void BlockRandomizer::start_epoch(const EpochConfiguration& config) {
  check_workers(config);
  const size_t size = epoch_size_in_samples(config, sweep_samples_);
  num_workers_ = config.num_workers;
  worker_rank_ = config.worker_rank;
  allow_cross_ = config.allow_minibatches_to_cross_sweeps;
  epoch_size_ = size;
  epoch_start_ = size * config.epoch_index;
  set_current_sample_position(epoch_start_);
}

void BlockRandomizer::set_configuration(const EpochConfiguration& config) {
  check_workers(config);
  num_workers_ = config.num_workers;
  worker_rank_ = config.worker_rank;
  allow_cross_ = config.allow_minibatches_to_cross_sweeps;
}

void BlockRandomizer::prepare_sweep(size_t position) {
  const size_t sweep = position / sweep_samples_;
  if (has_sweep_ && sweep == sweep_) return;
  evicted_valid_ = false;
  has_sweep_ = true;
  sweep_ = sweep;
  chunk_randomizer_.randomize(seed_offset_ + sweep);
  sequence_randomizer_.reset(seed_offset_ + sweep);
  position_of_chunk_.resize(num_chunks_);
  const auto& chunks = chunk_randomizer_.chunks();
  for (size_t p = 0; p < chunks.size(); ++p) {
    position_of_chunk_[chunks[p].original_index] = p;
    chunk_index_of_id_[chunks[p].chunk_id] = chunks[p].original_index;
  }
}

void BlockRandomizer::set_current_sample_position(size_t position) {
  prepare_sweep(position);
  const size_t offset = sequence_randomizer_.seek(position % sweep_samples_, seed_offset_ + sweep_);
  position_ = sweep_ * sweep_samples_ + offset;
  if (worker_rank_ >= num_chunks_) position_ = epoch_start_ + epoch_size_;  // this worker never gets data
  load_alone_next_ = true;
  evicted_valid_ = false;
  evict();
}

Sequences BlockRandomizer::get_next_sequences(size_t global_sample_count, size_t local_sample_count) {
  check_budgets(global_sample_count, local_sample_count);
  Sequences result = spare_sequences_.take(deserializer_->streams().size());
  size_t global_sum = 0;
  size_t local_sum = 0;
  do {
    // After a sweep end (only reached again with crossing allowed) no sequence is forced in.
    const bool boundary = result.end_of_sweep;
    auto [global, local] =
        load(global_sample_count - global_sum, local_sample_count - local_sum, result, !boundary);
    if (boundary && global == 0) break;
    global_sum += global;
    local_sum += local;
  } while (allow_cross_ && !result.end_of_epoch && result.end_of_sweep && global_sample_count > global_sum &&
           local_sample_count > local_sum);
  if (!defer_fetch_) cleaner_.clean(result, *deserializer_);
  return result;
}

void BlockRandomizer::fetch(Sequences& sequences) const {
  fetch_deferred(sequences);
}

std::pair<size_t, size_t> BlockRandomizer::load(size_t global_budget, size_t local_budget, Sequences& result,
                                                bool at_least_one) {
  prepare_sweep(position_);
  if (sequence_randomizer_.randomization_pending()) {
    load_alone_next_ = true;
    // A sweep starts: its first window is randomized below, on this thread, which takes a while for a window
    // of millions of sequences. Its chunks are known already: they start loading first, on the loader
    // threads, unless the first minibatch can take its sequences alone: then they start after it, and the
    // randomization, which that minibatch waits for, has a core to itself (2.9 million sequences on 2 cores:
    // 0.22 s against 0.36 s), while a sweep read flat out took as long either way (5.75-5.98 s against
    // 5.79-5.87 s, 2 GB of CTF).
    prefetch_window();
    if (!deserializer_->loads_sequences_alone()) loader_.flush();
  }
  const size_t sweep_offset = position_ % sweep_samples_;
  const size_t end = epoch_start_ + epoch_size_;
  if (position_ >= end) {
    result.end_of_epoch = true;
    result.end_of_sweep |= position_ >= sweep_samples_ && sweep_offset == 0;
    return {0, 0};
  }
  global_budget = std::min(global_budget, sweep_samples_ - sweep_offset);
  size_t global = 0;
  size_t local = 0;
  taken_.clear();
  const bool skipping = !delivered_.positions.empty() && position_ < delivered_until_;
  sequence_randomizer_.next([&](const RandomizedSequence& s) {
    bool is_local = s.source_position % num_workers_ == worker_rank_;
    if (skipping && is_local) {
      const size_t earlier_owner = s.source_position % delivered_.positions.size();
      if (position_ + global < delivered_.positions[earlier_owner]) is_local = false;
    }
    if (!at_least_one) {
      if (global + s.number_of_samples > global_budget) return false;
      if (is_local && local + s.number_of_samples > local_budget) return false;
    }
    if (position_ + global >= end) {
      result.end_of_epoch = true;
      result.end_of_sweep |= sweep_offset + global >= sweep_samples_;
      return false;
    }
    if (is_local) {
      taken_.push_back(s);
      local += s.number_of_samples;
      at_least_one = false;
    }
    global += s.number_of_samples;
    return true;
  });
  result.end_of_sweep |= sweep_offset + global >= sweep_samples_;
  result.end_of_epoch |= position_ + global >= end;
  position_ += global;

  const size_t total = result.keys.size() + taken_.size();  // one allocation per vector, not one per doubling
  if (!defer_fetch_) {
    for (auto& stream : result.data) stream.reserve(total);
  } else {
    result.fetch_chunks.reserve(total);
    result.fetch_indices.reserve(total);
  }
  result.keys.reserve(total);
  result.chunk_ids.reserve(total);
  taken_chunks_.clear();
  alone_of_taken_.assign(taken_.size(), -1);
  alone_.clear();
  if (load_alone_next_) load_alone_what_is_loading();
  load_alone_next_ = false;
  // Each chunk is looked up, and kept in `result`, once per minibatch: the loop over the sequences then
  // holds no atomic reference counting, whose locked instructions would wait for each sequence's cache miss
  // before the next could start (with the whole corpus as window, most of the time of a sweep of short
  // sequences).
  chunk_of_position_.resize(num_chunks_, nullptr);
  for (const AloneLoad& a : alone_) {
    if (a.chunk) keep_chunk(result, a.chunk);
  }
  const auto forget_lookups = [this] {
    for (size_t p : positions_looked_up_) chunk_of_position_[p] = nullptr;
    positions_looked_up_.clear();
  };
  try {
    take_chunks(result);
  } catch (...) {
    forget_lookups();  // a chunk that failed to load: the next load() looks every chunk up again
    throw;
  }
  forget_lookups();
  if (defer_fetch_) {
    for (size_t k = 0; k < taken_.size(); ++k) {
      const RandomizedSequence& s = taken_[k];
      result.fetch_chunks.push_back(taken_chunks_[k]);
      result.fetch_indices.push_back(s.index_in_chunk);
      result.keys.push_back(s.key);
      result.chunk_ids.push_back(chunk_randomizer_.chunks()[s.source_position].chunk_id);
    }
  } else {
    for (size_t k = 0; k < taken_.size(); ++k) taken_chunks_[k]->prefetch_sequence(taken_[k].index_in_chunk);
    for (size_t k = 0; k < taken_.size(); ++k) {
      const RandomizedSequence& s = taken_[k];
      append_sequence(result, *taken_chunks_[k], chunk_randomizer_.chunks()[s.source_position].chunk_id,
                      s.index_in_chunk, s.key, scratch_);
    }
  }
  alone_.clear();
  taken_chunks_.clear();
  evict();
  loader_.flush();  // the next chunks load while these sequences are delivered
  return {global, local};
}

void BlockRandomizer::skip_delivered(const DeliveredBefore& delivered) {
  delivered_ = delivered;
  delivered_until_ = 0;
  for (size_t p : delivered_.positions) delivered_until_ = std::max(delivered_until_, p);
}

// The first minibatch from a new position (an epoch's or a sweep's start, a restore) takes its sequences
// whose chunks are still loading in the background alone, where the deserializer can
// (Deserializer::load_sequences), instead of waiting for those chunks: with the default window (the whole
// corpus) it would wait until every chunk is parsed. The chunks still load, for the sequences to come, and a
// sequence the deserializer cannot load alone (a malformed one, say) waits for its chunk, whose load reports
// what it has to. The data delivered is the same either way. Later minibatches wait for the chunks: with
// the loader threads busy, parsing sequences twice would take the cores from them, and a sweep read as fast
// as it can be would take longer (a 2 GB sparse CTF file on 2 cores: 14 % when every minibatch did it).
void BlockRandomizer::load_alone_what_is_loading() {
  alone_.clear();
  loader_.flush();
  if (!loader_.any_loading()) return;
  alone_of_position_.resize(num_chunks_, -2);
  for (size_t k = 0; k < taken_.size(); ++k) {
    const size_t position = taken_[k].source_position;
    int32_t& slot = alone_of_position_[position];
    if (slot == -2) {
      const uint32_t chunk_id = chunk_randomizer_.chunks()[position].chunk_id;
      slot = -1;
      if (loader_.loading(chunk_id)) {
        slot = static_cast<int32_t>(alone_.size());
        alone_.push_back(AloneLoad{chunk_id, {}, nullptr});
      }
    }
    if (slot >= 0) {
      alone_[slot].indices.push_back(taken_[k].index_in_chunk);
      alone_of_taken_[k] = slot;
    }
  }
  for (const RandomizedSequence& s : taken_) alone_of_position_[s.source_position] = -2;
  sequences_loaded_alone_ +=
      load_alone(*deserializer_, alone_, [this](uint32_t chunk_id) { return loader_.loading(chunk_id); });
}

// The chunk of each taken sequence into taken_chunks_, each chunk looked up and kept in `result` once.
void BlockRandomizer::take_chunks(Sequences& result) {
  for (size_t k = 0; k < taken_.size(); ++k) {
    const RandomizedSequence& s = taken_[k];
    const int32_t slot = alone_of_taken_[k];
    const Chunk* chunk;
    if (slot >= 0 && alone_[slot].chunk) {
      chunk = alone_[slot].chunk.get();
    } else {
      const Chunk*& known = chunk_of_position_[s.source_position];
      if (known == nullptr) {
        const ChunkPtr loaded = chunk_at(s.source_position);
        keep_chunk(result, loaded);
        known = loaded.get();
        positions_looked_up_.push_back(s.source_position);
      }
      chunk = known;
    }
    taken_chunks_.push_back(chunk);
  }
}

ChunkPtr BlockRandomizer::chunk_at(size_t source_position) {
  return loader_.get(chunk_randomizer_.chunks()[source_position].chunk_id);
}

// Keeps this worker's chunks that later sequences of the sweep can still come from: sequences delivered from
// randomized position c onwards have their sources at or after window_begin(c). Then starts loading the
// chunks of c's window (plus one ahead), nearest first, so parsing overlaps delivery. Memory stays within
// the window and a chunk or two.
void BlockRandomizer::evict() {
  if (sequence_randomizer_.at_sweep_end()) {
    // The next sweep's first evict() keeps what its window needs of these and drops the rest.
    if (!chunks_outlive_sweep()) loader_.clear();
    evicted_valid_ = false;
    return;
  }
  const auto& chunks = chunk_randomizer_.chunks();
  const RandomizedChunk& current = chunks[sequence_randomizer_.cursor_position()];
  const size_t keep_begin = current.window_begin;
  const size_t keep_end = std::max(sequence_randomizer_.loaded_end(), current.window_end);
  const std::array<size_t, 6> window{sweep_,   keep_begin,   current.window_end,
                                     keep_end, num_workers_, worker_rank_};
  if (evicted_valid_ && window == evicted_for_) return;  // kept and prefetched for this window already
  evicted_for_ = window;
  evicted_valid_ = true;
  // Two references: the std::function holds them without allocating (this runs for every minibatch).
  const std::pair<size_t, size_t> keep{keep_begin, keep_end};
  loader_.retain_if([this, &keep](uint32_t chunk_id) {
    const size_t p = position_of_chunk_[chunk_index_of_id_[chunk_id]];
    return p >= keep.first && p < keep.second && p % num_workers_ == worker_rank_;
  });
  prefetch_window();
}

// CNTK parses every chunk again in every sweep. Where that cannot change what is delivered, the chunks loaded
// at a sweep's end stay for the next sweep instead (a corpus of one chunk is then parsed once, not once per
// sweep): the data files are the versions opened (a deserializer without files, a user's, may give other data
// at each load), and no error was tolerated so far (CNTK counts a chunk's errors against maxErrors at every
// parse).
bool BlockRandomizer::chunks_outlive_sweep() const {
  const std::vector<Deserializer::InputFileVersion> files = deserializer_->input_files();
  if (files.empty()) return false;
  SkipReport skips;
  deserializer_->add_skips(skips);
  if (skips.errors + skips.rows_skipped + skips.samples_skipped > 0) return false;
  for (const Deserializer::InputFileVersion& file : files) {
    try {
      if (Env::current()->file_identity(file.path) != file.identity) return false;
    } catch (const Error&) {
      return false;  // gone or unreadable: the next load reports it
    }
  }
  return true;
}

// Asks the loader for this worker's chunks of the current position's window, plus one ahead, nearest first.
void BlockRandomizer::prefetch_window() {
  if (sequence_randomizer_.at_sweep_end()) return;
  const auto& chunks = chunk_randomizer_.chunks();
  const RandomizedChunk& current = chunks[sequence_randomizer_.cursor_position()];
  const size_t prefetch_end = std::min(chunks.size(), current.window_end + 1);
  for (size_t p = current.window_begin; p < prefetch_end; ++p) {
    if (p % num_workers_ == worker_rank_) loader_.prefetch(chunks[p].chunk_id);
  }
}

}  // namespace cntkio::pipeline
