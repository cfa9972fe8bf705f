#include "pipeline/chunk_randomizer.hpp"

#include <algorithm>
#include <numeric>

#include "pipeline/random.hpp"

namespace cntkio::pipeline {

ChunkRandomizer::ChunkRandomizer(std::vector<ChunkInfo> chunks, size_t window, bool sample_based_window)
    : chunks_(std::move(chunks)), window_(window), sample_based_(sample_based_window) {
  for (const ChunkInfo& c : chunks_) {
    total_samples_ += c.number_of_samples;
    total_sequences_ += c.number_of_sequences;
  }
}

void ChunkRandomizer::randomize(uint64_t seed) {
  const size_t n = chunks_.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  RandomEngine engine;
  reseed(engine, seed);
  shuffle_all(order, engine);

  randomized_.assign(n, RandomizedChunk{});
  size_t samples = 0;
  size_t sequences = 0;
  for (size_t i = 0; i < n; ++i) {
    const ChunkInfo& info = chunks_[order[i]];
    RandomizedChunk& c = randomized_[i];
    c.chunk_id = info.id;
    c.original_index = order[i];
    c.number_of_samples = info.number_of_samples;
    c.number_of_sequences = info.number_of_sequences;
    c.sample_start = samples;
    c.sequence_start = sequences;
    samples += info.number_of_samples;
    sequences += info.number_of_sequences;
  }
  if (sample_based_) {
    compute_sample_windows();
  } else {
    compute_chunk_windows();
  }
}

// Each window starts from its left neighbour's and is adjusted so that it spans about half the window in
// samples on either side of the chunk's start.
void ChunkRandomizer::compute_sample_windows() {
  const size_t n = randomized_.size();
  const size_t half = window_ / 2;
  for (size_t i = 0; i < n; ++i) {
    RandomizedChunk& c = randomized_[i];
    size_t begin = i == 0 ? 0 : randomized_[i - 1].window_begin;
    size_t end = i == 0 ? 1 : randomized_[i - 1].window_end;
    while (c.sample_start - randomized_[begin].sample_start > half) ++begin;
    begin = std::min(begin, i);
    end = std::max(end, i + 1);
    while (end < n && randomized_[end].sample_end() - c.sample_start < half) ++end;
    c.window_begin = begin;
    c.window_end = end;
  }
}

// CNTK stores chunk windows in 32 bits, so a window of k * 2^32 + m chunks acts as m there; we keep the full
// width (only absurd settings differ).
void ChunkRandomizer::compute_chunk_windows() {
  const size_t n = randomized_.size();
  const size_t half = window_ / 2;
  const size_t width = window_ == 0 ? 1 : window_;
  for (size_t i = 0; i < n; ++i) {
    RandomizedChunk& c = randomized_[i];
    size_t begin = i > half ? i - half : 0;
    size_t end = width > n - begin ? n + 1 : begin + width;  // n + 1 stands for "past the end"
    if (end > n) {
      end = n;
      begin = n > width ? n - width : 0;
    }
    c.window_begin = begin;
    c.window_end = end;
  }
}

}  // namespace cntkio::pipeline
