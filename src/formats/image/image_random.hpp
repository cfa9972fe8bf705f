// The random draws of CNTK's image transforms (spec image.md §8.1).
//
// Every random transform owns one std::mt19937 per position j of a sequence in the current batch, seeded
// with seed + j and never reseeded. Draws follow Boost.Random's algorithms, which differ from the std::
// distributions: uniform_real, uniform_int and bernoulli are re-implemented here from the spec; the normal
// draw is Boost's own 128-layer ziggurat (boost::random::normal_distribution), whose rejection and tail
// branches cannot be reproduced otherwise.
//
// Thread-safety: an EngineSet is grown by one thread (grow); afterwards different slots may be used from
// different threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace cntkio::image {

using Engine = std::mt19937;

/// Boost's uniform_real_distribution<double>(a, b) on a 32-bit engine: one draw, u / 2^32 * (b - a) + a,
/// redrawn while the result is not below b.
double uniform_real(Engine& engine, double a, double b);

/// Boost's uniform_int_distribution<int>(lo, hi): no draw if lo == hi, else bucket rejection.
int uniform_int(Engine& engine, int lo, int hi);

/// Boost's bernoulli_distribution<>(0.5): true iff the draw is at most 2^31 - 1.
bool bernoulli_half(Engine& engine);

/// Boost's normal_distribution<float>(0, sigma).
float normal_float(Engine& engine, float sigma);

/// The per-slot engines of one transform.
class EngineSet {
 public:
  explicit EngineSet(uint64_t seed = 0) : seed_(seed) {}
  /// Creates engines for slots [size(), n) with seeds seed + j; existing engines keep their state.
  void grow(size_t n);
  /// The engine of slot `j` (grow must have covered it).
  Engine& at(size_t j) { return engines_[j]; }
  size_t size() const { return engines_.size(); }

 private:
  uint64_t seed_;
  std::vector<Engine> engines_;
};

}  // namespace cntkio::image
