// ChunkRandomizer: the per-sweep chunk order of CNTK's block randomization (ChunkRandomizer.cpp).
//
// For a seed it shuffles the chunk list with CNTK's shuffle_all, lays the chunks out on the sweep's timeline
// (prefix sums of samples and sequences) and gives every randomized position a window [begin, end) of
// positions its sequences may be exchanged with.
//
// Thread-safety: none; owned by one randomizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cntkio/sequence.hpp"

namespace cntkio::pipeline {

/// One chunk at its randomized position.
struct RandomizedChunk {
  uint32_t chunk_id = 0;      ///< the deserializer's chunk id
  size_t original_index = 0;  ///< index in the chunk list given to the ChunkRandomizer
  size_t number_of_samples = 0;
  size_t number_of_sequences = 0;
  size_t sample_start = 0;    ///< samples of all positions before this one
  size_t sequence_start = 0;  ///< sequences of all positions before this one
  size_t window_begin = 0;    ///< first position of the randomization window
  size_t window_end = 0;      ///< one past its last position

  size_t sample_end() const { return sample_start + number_of_samples; }
  size_t sequence_end() const { return sequence_start + number_of_sequences; }
};

class ChunkRandomizer {
 public:
  /// `window` is R in samples if `sample_based_window`, else in chunks (0 = each chunk alone).
  ChunkRandomizer(std::vector<ChunkInfo> chunks, size_t window, bool sample_based_window);

  /// Shuffles the chunks with a fresh engine seeded with `seed` and recomputes positions and windows.
  void randomize(uint64_t seed);

  /// Positions 0..n-1 of the last randomize() call.
  const std::vector<RandomizedChunk>& chunks() const { return randomized_; }
  size_t size() const { return chunks_.size(); }
  size_t total_samples() const { return total_samples_; }
  size_t total_sequences() const { return total_sequences_; }

 private:
  void compute_sample_windows();
  void compute_chunk_windows();

  std::vector<ChunkInfo> chunks_;
  size_t window_;
  bool sample_based_;
  size_t total_samples_ = 0;
  size_t total_sequences_ = 0;
  std::vector<RandomizedChunk> randomized_;
};

}  // namespace cntkio::pipeline
