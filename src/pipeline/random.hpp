// CNTK's random primitives (RandomOrdering.h): the engine, RandMT and the two shuffles.
//
// Randomized orders must match CNTK's bit for bit, so these reproduce its exact arithmetic, biased modulo
// included. Seeds are 64-bit (CNTK on Linux casts them to 64-bit `unsigned long`; on Windows it truncates
// them to 32 bits, which we do not reproduce).
//
// Thread-safety: free functions; an engine must not be shared between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace cntkio::pipeline {

using RandomEngine = std::mt19937_64;

/// Reseeds `engine` the way CNTK does: `engine.seed((unsigned long)seed)` with a 64-bit unsigned long.
void reseed(RandomEngine& engine, uint64_t seed);

/// A value in [begin, end): begin + engine() % (end - begin). Requires begin < end.
inline uint64_t rand_mt(RandomEngine& engine, uint64_t begin, uint64_t end) {
  return begin + engine() % (end - begin);
}

/// CNTK's whole-vector shuffle: for every i, swap v[i] with a uniformly drawn v[j], j in [0, n).
/// Not Fisher-Yates (so not uniform over permutations), but it is what fixes CNTK's chunk order.
template <class T>
void shuffle_all(std::vector<T>& v, RandomEngine& engine) {
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) {
    size_t j = static_cast<size_t>(rand_mt(engine, 0, n));
    std::swap(v[i], v[j]);
  }
}

/// CNTK's range shuffle of v[begin, end): forward Fisher-Yates, j drawn in [i, end).
template <class T>
void shuffle_range(std::vector<T>& v, size_t begin, size_t end, RandomEngine& engine) {
  for (size_t i = begin; i < end; ++i) {
    size_t j = static_cast<size_t>(rand_mt(engine, i, end));
    std::swap(v[i], v[j]);
  }
}

}  // namespace cntkio::pipeline
