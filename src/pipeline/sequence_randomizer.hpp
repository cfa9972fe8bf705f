// SequenceRandomizer: CNTK's lazy within-window sequence shuffle of one sweep (SequenceRandomizer.cpp).
//
// Works on the randomized chunk positions of a ChunkRandomizer. Every position keeps as many sequence slots
// as its chunk has sequences; sequences are exchanged between positions whose windows allow it, by rejection
// sampling with CNTK's exact order of draws, so the result equals CNTK's for the same seed. Positions are
// randomized lazily as delivery advances and dropped once no later position can need them, so memory is
// bounded by the window. The order depends only on the seed and the chunk layout, never on how delivery is
// split into calls.
//
// Thread-safety: none; owned by one randomizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "core/thread_pool.hpp"
#include "pipeline/chunk_randomizer.hpp"
#include "pipeline/random.hpp"

namespace cntkio::pipeline {

/// A sequence as the randomizer moves it around.
struct RandomizedSequence {
  uint32_t source_position = 0;  ///< randomized position of the chunk it comes from
  uint32_t index_in_chunk = 0;
  uint32_t number_of_samples = 0;  ///< scheduling length
  SequenceKey key;
};

class SequenceRandomizer {
 public:
  /// Both must outlive this object; `chunks` must have been randomized before reset().
  /// `pool` (may be null) lists the chunks of a window in parallel, with the calling thread.
  SequenceRandomizer(const Deserializer& deserializer, const ChunkRandomizer& chunks,
                     core::ThreadPool* pool = nullptr);

  /// Starts the sweep over: seeds the engine with `seed` and forgets everything. The first position (which
  /// takes its whole window) is randomized by the first next(), so that the caller can start loading that
  /// window's chunks first (randomization_pending()).
  void reset(uint64_t seed);

  /// Whether the sweep's first position is still to be randomized (reset() was called, next() not yet).
  bool randomization_pending() const { return pending_; }
  /// Randomizes the first position now if it is pending.
  void ensure_randomized();

  /// Hands the sequences to `accept` in randomized order from the current cursor, until `accept` returns
  /// false (that sequence is not consumed) or the sweep ends.
  template <class Accept>
  void next(Accept&& accept) {
    ensure_randomized();
    const auto& chunks = chunks_.chunks();
    while (cursor_position_ < chunks.size()) {
      const RandomizedChunk& c = chunks[cursor_position_];
      const RandomizedSequence& s = at(cursor_position_, cursor_sequence_ - c.sequence_start);
      if (!accept(s)) return;
      ++cursor_sequence_;
      cursor_sample_ += s.number_of_samples;
      if (cursor_sequence_ == c.sequence_end()) {
        ++cursor_position_;
        randomize_next();
        release();
      }
    }
  }

  /// Moves to the first sequence starting at or after sample `offset` of the sweep and returns its start.
  /// `seed` is used if the sweep must be randomized again from its beginning.
  size_t seek(size_t offset, uint64_t seed);

  /// Sample offset in the sweep of the next sequence to deliver.
  size_t current_sample() const { return cursor_sample_; }
  /// Whether every sequence of the sweep has been delivered.
  bool at_sweep_end() const { return cursor_position_ >= chunks_.size(); }
  /// Randomized chunk position whose sequences are delivered next.
  size_t cursor_position() const { return cursor_position_; }
  /// Positions whose sequences are held: [first, second).
  size_t loaded_begin() const { return load_begin_; }
  size_t loaded_end() const { return load_end_; }

 private:
  struct PositionInfo {
    size_t start = 0;    // sample offset of the position in the sweep
    size_t samples = 0;  // samples of the sequences now at the position
  };

  RandomizedSequence& at(size_t position, size_t index) { return window_[position - load_begin_][index]; }
  size_t position_of(size_t sequence, size_t first, size_t last) const;
  void randomize_next();
  void finish_position(size_t next);
  bool shuffle_one_window(size_t count);
  void release();

  uint64_t next_draw();
  uint64_t draw_ahead(size_t k);

  void list_positions(size_t begin, size_t end);
  void list_in_parallel(size_t begin, size_t end,
                        const std::function<RandomizedSequence*(size_t, size_t)>& destination,
                        const std::function<void()>& beside = {});

  const Deserializer& deserializer_;
  const ChunkRandomizer& chunks_;
  core::ThreadPool* pool_;
  RandomEngine engine_;
  // The engine's next outputs, drawn ahead of their use to prefetch the sequences they will pick (see
  // randomize_next); used in order, so the draws are the engine's.
  static constexpr size_t kDrawsAhead = 32;
  struct DrawsAhead {
    uint64_t values[kDrawsAhead] = {};
    size_t begin = 0;
    size_t count = 0;
    uint64_t used = 0;  // since the seed
  };
  DrawsAhead draws_;
  std::vector<uint64_t> starts_;  // per position: its chunk's RandomizedChunk::sequence_start
  std::deque<std::vector<RandomizedSequence>> window_;  // sequences of positions [load_begin_, load_end_)
  std::deque<PositionInfo> infos_;                      // final positions [load_begin_, randomized_end_)
  size_t load_begin_ = 0;
  size_t load_end_ = 0;
  size_t randomized_end_ = 0;    // positions before it are final
  size_t randomize_cursor_ = 0;  // positions before it have had their sequences swapped
  size_t randomized_samples_ = 0;
  size_t cursor_position_ = 0;
  size_t cursor_sequence_ = 0;  // index of the next sequence in the sweep
  size_t cursor_sample_ = 0;
  bool pending_ = false;  // reset() done, the first position not yet randomized
};

}  // namespace cntkio::pipeline
