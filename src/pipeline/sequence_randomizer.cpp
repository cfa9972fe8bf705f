#include "pipeline/sequence_randomizer.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "cntkio/errors.hpp"
#include "pipeline/randomizer_common.hpp"

namespace cntkio::pipeline {

SequenceRandomizer::SequenceRandomizer(const Deserializer& deserializer, const ChunkRandomizer& chunks,
                                       core::ThreadPool* pool)
    : deserializer_(deserializer), chunks_(chunks), pool_(pool) {}

void SequenceRandomizer::reset(uint64_t seed) {
  reseed(engine_, seed);
  draws_ = DrawsAhead{};
  starts_.clear();
  for (const RandomizedChunk& c : chunks_.chunks()) starts_.push_back(c.sequence_start);
  window_.clear();
  infos_.clear();
  load_begin_ = load_end_ = 0;
  randomized_end_ = randomize_cursor_ = randomized_samples_ = 0;
  cursor_position_ = cursor_sequence_ = cursor_sample_ = 0;
  pending_ = true;  // the first position is randomized by the first next() (see randomization_pending())
}

void SequenceRandomizer::ensure_randomized() {
  if (!pending_) return;
  randomize_next();  // may throw (a listing failed): then it is still pending, and a retry redoes it
  pending_ = false;
}

// The last position in [first, last) whose sequences start at or before `sequence` (which must lie in
// them). Branch-free: the draws make every comparison a coin toss, which a branch would mispredict.
size_t SequenceRandomizer::position_of(size_t sequence, size_t first, size_t last) const {
  const uint64_t* base = starts_.data() + first;
  size_t n = last - first;
  while (n > 1) {
    const size_t half = n / 2;
    base = base[half] <= sequence ? base + half : base;
    n -= half;
  }
  return static_cast<size_t>(base - starts_.data());
}

uint64_t SequenceRandomizer::next_draw() {
  ++draws_.used;
  if (draws_.count == 0) return engine_();
  const uint64_t v = draws_.values[draws_.begin];
  draws_.begin = (draws_.begin + 1) % kDrawsAhead;
  --draws_.count;
  return v;
}

// The engine's output k places after the next one (k < kDrawsAhead).
uint64_t SequenceRandomizer::draw_ahead(size_t k) {
  while (draws_.count <= k) {
    draws_.values[(draws_.begin + draws_.count) % kDrawsAhead] = engine_();
    ++draws_.count;
  }
  return draws_.values[(draws_.begin + k) % kDrawsAhead];
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

  const size_t first = randomize_cursor_ == 0 ? 0 : chunks[randomize_cursor_ - 1].sequence_end();
  const size_t last = chunks[next - 1].sequence_end();
  if (first == 0 && load_end_ == 0 && next == n && shuffle_one_window(last)) {
    load_end_ = n;
    finish_position(next);
    return;
  }
  list_positions(load_end_, new_load_end);
  load_end_ = std::max(load_end_, new_load_end);

  // One draw per attempt, rejected ones included: a draw is kept only if each of the two sequences may
  // move into the other's position. This is what makes the order equal CNTK's.
  // A window of many sequences is larger than the caches: each swap would wait for a miss. The sequence that
  // step t + kAhead will draw (if no draw before it is rejected) is prefetched at step t.
  // Its pick is kept for step t + kAhead, which uses it unless a draw was rejected in between.
  constexpr size_t kAhead = 16;
  static_assert(kAhead < kDrawsAhead);
  struct Pick {
    uint64_t draw = UINT64_MAX;  // the number of the draw it comes from
    size_t j = 0;
    size_t cj = 0;
  };
  Pick picks[kAhead] = {};
  size_t c = randomize_cursor_;
  size_t c_ahead = c;
  for (size_t t = first; t < last; ++t) {
    while (chunks[c].sequence_end() <= t) ++c;
    const size_t wb = chunks[c].window_begin;
    const size_t we = chunks[c].window_end;
    const uint64_t lo = chunks[wb].sequence_start;
    const uint64_t hi = chunks[we - 1].sequence_end();
    Pick& pick = picks[t % kAhead];
    const Pick now = pick;
    if (t + kAhead < last) {
      while (chunks[c_ahead].sequence_end() <= t + kAhead) ++c_ahead;
      const size_t wb_ahead = chunks[c_ahead].window_begin;
      const size_t we_ahead = chunks[c_ahead].window_end;
      const uint64_t lo_ahead = chunks[wb_ahead].sequence_start;
      pick.draw = draws_.used + kAhead;
      pick.j = lo_ahead + draw_ahead(kAhead) % (chunks[we_ahead - 1].sequence_end() - lo_ahead);
      pick.cj = position_of(pick.j, wb_ahead, we_ahead);
      __builtin_prefetch(&at(pick.cj, pick.j - chunks[pick.cj].sequence_start), 1);
    }
    RandomizedSequence& at_t = at(c, t - chunks[c].sequence_start);
    for (;;) {
      size_t j;
      size_t cj;
      if (now.draw == draws_.used) {
        next_draw();
        j = now.j;
        cj = now.cj;
      } else {
        j = static_cast<size_t>(lo + next_draw() % (hi - lo));  // rand_mt's formula
        cj = position_of(j, wb, we);
      }
      RandomizedSequence& at_j = at(cj, j - chunks[cj].sequence_start);
      if (at_j.source_position < wb || at_j.source_position >= we) continue;
      if (at_t.source_position < chunks[cj].window_begin || at_t.source_position >= chunks[cj].window_end) {
        continue;
      }
      std::swap(at_t, at_j);
      break;
    }
  }

  finish_position(next);
}

void SequenceRandomizer::finish_position(size_t next) {
  size_t samples = 0;
  for (const RandomizedSequence& s : window_[randomized_end_ - load_begin_]) samples += s.number_of_samples;
  infos_.push_back({randomized_samples_, samples});
  randomized_samples_ += samples;
  ++randomized_end_;
  randomize_cursor_ = next;
}

// Where every position's window is every position (the default window holds the whole corpus), no draw is
// ever rejected: the swaps only permute the sweep's sequences. They are then made on a permutation of
// 4-byte numbers, which the caches hold, rather than on the sequences themselves, which they do not (2.5
// million sequences: 80 MB), and the sequences, listed into one buffer, move once into their positions. The
// draws are the same. False (nothing done) where the windows differ or there are too many sequences to
// number in 32 bits.
bool SequenceRandomizer::shuffle_one_window(size_t count) {
  const auto& chunks = chunks_.chunks();
  const size_t n = chunks.size();
  if (count >= UINT32_MAX || !window_.empty()) return false;
  for (const RandomizedChunk& c : chunks) {
    if (c.window_begin != 0 || c.window_end != n) return false;
  }
  // One buffer, not zeroed first; a large one on huge pages where the kernel gives them on request: the
  // moves below read it in no order. (A small one stays small: a one-chunk corpus does this every sweep.)
  constexpr size_t kHugePage = 2 << 20;
  const size_t needed = std::max<size_t>(1, count) * sizeof(RandomizedSequence);
  const bool huge = needed >= 4 * kHugePage;
  const size_t bytes = huge ? (needed + kHugePage - 1) / kHugePage * kHugePage : needed;
  std::unique_ptr<RandomizedSequence, decltype(&std::free)> buffer(
      static_cast<RandomizedSequence*>(huge ? std::aligned_alloc(kHugePage, bytes) : std::malloc(bytes)),
      &std::free);
  if (!buffer) throw std::bad_alloc();
  if (huge) ::madvise(buffer.get(), bytes, MADV_HUGEPAGE);
  RandomizedSequence* all = buffer.get();
  // The draws depend on the count alone: the permutation is drawn on one thread while the others list.
  std::vector<uint32_t> order(count);
  // The permutation is the longest part (2.5 million draws and swaps in 10 MB): each swap's other end is
  // drawn kAhead steps early and prefetched, and the engine is called here rather than through next_draw()
  // (a call each, which the shared library cannot inline) once the draws drawn ahead are used up.
  auto draw_permutation = [&] {
    for (size_t t = 0; t < count; ++t) order[t] = static_cast<uint32_t>(t);
    auto draw = [&]() -> uint32_t {
      uint64_t v;
      if (draws_.count == 0) {
        ++draws_.used;
        v = engine_();
      } else {
        v = next_draw();
      }
      return static_cast<uint32_t>(v % count);  // rand_mt's formula
    };
    constexpr size_t kAhead = 32;
    uint32_t ahead[kAhead];
    const size_t first = std::min(kAhead, count);
    for (size_t t = 0; t < first; ++t) {
      ahead[t] = draw();
      __builtin_prefetch(&order[ahead[t]], 1);
    }
    for (size_t t = 0; t < count; ++t) {
      const uint32_t j = ahead[t % kAhead];
      if (t + kAhead < count) {
        ahead[t % kAhead] = draw();
        __builtin_prefetch(&order[ahead[t % kAhead]], 1);
      }
      std::swap(order[t], order[j]);
    }
  };
  // A listing that fails (a remote read, a changed file) leaves the draws and the window as they were, so
  // that a retry gives the same order.
  const RandomEngine engine_before = engine_;
  const DrawsAhead draws_before = draws_;
  try {
    // (The listing was checked against the chunk's sequence count before it is written.)
    list_in_parallel(
        0, n, [&](size_t p, size_t) { return all + chunks[p].sequence_start; }, draw_permutation);
    // Each position's sequences move into it on its own, so the positions are shared with idle workers too.
    window_.resize(n);
    auto move_position = [&](size_t p) {
      constexpr size_t kAhead = 16;  // the moves read `all` in no order: prefetched
      const size_t begin = chunks[p].sequence_start;
      const size_t end = begin + chunks[p].number_of_sequences;
      std::vector<RandomizedSequence>& position = window_[p];
      position.reserve(end - begin);  // written once, not zeroed first
      for (size_t t = begin; t < end; ++t) {
        if (t + kAhead < end) __builtin_prefetch(&all[order[t + kAhead]]);
        position.push_back(all[order[t]]);
      }
    };
    core::run_parts(pool_ != nullptr && n > 1 ? pool_ : nullptr, pool_ != nullptr ? pool_->size() : 0, n,
                    move_position);
  } catch (...) {
    window_.clear();
    engine_ = engine_before;
    draws_ = draws_before;
    throw;
  }
  return true;
}

// Appends the sequences of positions [begin, end) to the window. A window's first randomization lists all
// of its chunks (the whole corpus, by default), which the pool's idle workers share with this thread.
void SequenceRandomizer::list_positions(size_t begin, size_t end) {
  if (end <= begin) return;
  std::vector<std::vector<RandomizedSequence>> listed(end - begin);
  list_in_parallel(begin, end, [&](size_t p, size_t count) {
    listed[p - begin].resize(count);
    return listed[p - begin].data();
  });
  for (auto& sequences : listed) window_.push_back(std::move(sequences));
}

// Lists the sequences of each position p in [begin, end) into destination(p, count), on this thread and the
// pool's idle workers; `beside`, when given, runs on one of them meanwhile.
void SequenceRandomizer::list_in_parallel(
    size_t begin, size_t end, const std::function<RandomizedSequence*(size_t, size_t)>& destination,
    const std::function<void()>& beside) {
  const auto& chunks = chunks_.chunks();
  const size_t first_listing = beside ? 1 : 0;
  auto list = [&](size_t k) {
    if (k < first_listing) {
      beside();
      return;
    }
    const size_t p = begin + k - first_listing;
    const RandomizedChunk& c = chunks[p];
    std::vector<SequenceInfo> infos;
    infos.reserve(c.number_of_sequences);
    deserializer_.sequence_infos_for_chunk(c.chunk_id, infos);
    check_chunk_listing(c.chunk_id, c.number_of_sequences, c.number_of_samples, infos);
    RandomizedSequence* out = destination(p, infos.size());
    for (size_t i = 0; i < infos.size(); ++i) {
      out[i] = {static_cast<uint32_t>(p), infos[i].index_in_chunk, infos[i].number_of_samples, infos[i].key};
    }
  };
  const size_t parts = end - begin + first_listing;
  const size_t helpers = pool_ != nullptr && parts > 1 ? pool_->size() : 0;
  core::run_parts(helpers > 0 ? pool_ : nullptr, helpers, parts, list);
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
