#include "pipeline/sequence_randomizer.hpp"

#include <algorithm>
#include <cassert>
#include <string>
#include <utility>

#include "cntkio/errors.hpp"
#include "pipeline/randomizer_common.hpp"

namespace cntkio::pipeline {

SequenceRandomizer::SequenceRandomizer(const Deserializer& deserializer, const ChunkRandomizer& chunks)
    : deserializer_(deserializer), chunks_(chunks) {}

void SequenceRandomizer::reset(uint64_t seed) {
  reseed(engine_, seed);
  window_.clear();
  infos_.clear();
  load_begin_ = load_end_ = 0;
  randomized_end_ = randomize_cursor_ = randomized_samples_ = 0;
  cursor_position_ = cursor_sequence_ = cursor_sample_ = 0;
  pending_ = true;  // the first position is randomized by the first next() (see randomization_pending())
}

void SequenceRandomizer::ensure_randomized() {
  if (!pending_) return;
  pending_ = false;
  randomize_next();
}

size_t SequenceRandomizer::position_of(size_t sequence, size_t first, size_t last) const {
  const auto& chunks = chunks_.chunks();
  auto it = std::upper_bound(chunks.begin() + first, chunks.begin() + last, sequence,
                             [](size_t s, const RandomizedChunk& c) { return s < c.sequence_start; });
  return static_cast<size_t>(it - chunks.begin()) - 1;
}

// Makes position randomized_end_ final. Every position whose window reaches it must have had its sequences
// swapped first, and every position in those windows must be loaded.
void SequenceRandomizer::randomize_next() {
  const auto& chunks = chunks_.chunks();
  const size_t n = chunks.size();
  if (cursor_position_ != randomized_end_ || randomized_end_ >= n) return;

  size_t next = chunks[randomized_end_].window_end;
  while (next < n && chunks[next].window_begin <= randomized_end_) ++next;
  const size_t new_load_end = chunks[next - 1].window_end;

  for (size_t p = load_end_; p < new_load_end; ++p) {
    const RandomizedChunk& c = chunks[p];
    scratch_.clear();
    deserializer_.sequence_infos_for_chunk(c.chunk_id, scratch_);
    check_chunk_listing(c.chunk_id, c.number_of_sequences, c.number_of_samples, scratch_);
    std::vector<RandomizedSequence> sequences(scratch_.size());
    for (size_t i = 0; i < scratch_.size(); ++i) {
      sequences[i] = {static_cast<uint32_t>(p), scratch_[i].index_in_chunk, scratch_[i].number_of_samples,
                      scratch_[i].key};
    }
    window_.push_back(std::move(sequences));
  }
  load_end_ = std::max(load_end_, new_load_end);

  // One draw per attempt, rejected ones included: a draw is kept only if each of the two sequences may
  // move into the other's position. This is what makes the order equal CNTK's.
  const size_t first = randomize_cursor_ == 0 ? 0 : chunks[randomize_cursor_ - 1].sequence_end();
  const size_t last = chunks[next - 1].sequence_end();
  size_t c = randomize_cursor_;
  for (size_t t = first; t < last; ++t) {
    while (chunks[c].sequence_end() <= t) ++c;
    const size_t wb = chunks[c].window_begin;
    const size_t we = chunks[c].window_end;
    const uint64_t lo = chunks[wb].sequence_start;
    const uint64_t hi = chunks[we - 1].sequence_end();
    RandomizedSequence& at_t = at(c, t - chunks[c].sequence_start);
    for (;;) {
      const size_t j = static_cast<size_t>(rand_mt(engine_, lo, hi));
      const size_t cj = position_of(j, wb, we);
      RandomizedSequence& at_j = at(cj, j - chunks[cj].sequence_start);
      if (at_j.source_position < wb || at_j.source_position >= we) continue;
      if (at_t.source_position < chunks[cj].window_begin || at_t.source_position >= chunks[cj].window_end) {
        continue;
      }
      std::swap(at_t, at_j);
      break;
    }
  }

  size_t samples = 0;
  for (const RandomizedSequence& s : window_[randomized_end_ - load_begin_]) samples += s.number_of_samples;
  infos_.push_back({randomized_samples_, samples});
  randomized_samples_ += samples;
  ++randomized_end_;
  randomize_cursor_ = next;
}

// Drops positions that no later position can exchange sequences with.
void SequenceRandomizer::release() {
  const auto& chunks = chunks_.chunks();
  const size_t n = chunks.size();
  const size_t c = std::min(cursor_position_, n - 1);
  while (load_begin_ < n && load_begin_ < chunks[c].window_begin &&
         chunks[load_begin_].window_end <= cursor_position_) {
    assert(!infos_.empty());
    window_.pop_front();
    infos_.pop_front();
    ++load_begin_;
  }
}

size_t SequenceRandomizer::seek(size_t offset, uint64_t seed) {
  const size_t begin = infos_.empty() ? 0 : infos_.front().start;
  const size_t end = infos_.empty() ? 0 : infos_.back().start + infos_.back().samples;
  if (offset < begin) {
    // CNTK reseeds with the bare sweep index here (its seek quirk), so a restore with a non-zero
    // randomizationSeed can change the order. We deliberately differ: the caller passes seed0 + sweep, so a
    // restore reproduces the uninterrupted stream.
    reset(seed);
  } else if (offset < end) {
    size_t k = 0;
    while (infos_[k].start + infos_[k].samples <= offset) ++k;
    cursor_position_ = load_begin_ + k;
    cursor_sequence_ = chunks_.chunks()[cursor_position_].sequence_start;
    cursor_sample_ = infos_[k].start;
  }
  if (offset == cursor_sample_) return cursor_sample_;  // nothing to skip (and nothing to randomize yet)
  next([&](const RandomizedSequence&) { return cursor_sample_ < offset; });
  return cursor_sample_;
}

}  // namespace cntkio::pipeline
