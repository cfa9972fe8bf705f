// The random draws of CNTK's image transforms (spec image.md §8.1).
//
// Every random transform owns one std::mt19937 per position j of a sequence in the current batch, seeded
// with seed + j and never reseeded. Draws follow Boost.Random's algorithms, which differ from the std::
// distributions: uniform_real, uniform_int and bernoulli are re-implemented here from the spec; the normal
// draw is Boost's own 128-layer ziggurat (boost::random::normal_distribution), whose rejection and tail
// branches cannot be reproduced otherwise.
//
// Each engine counts the 32-bit outputs it has given. That count is the engine's whole state beyond its
// seed, so a reader checkpoint records it and a restore re-seeds the engine and discards that many outputs
// (cntkio's addition: CNTK never recorded its engines).
//
// Thread-safety: an EngineSet is grown and repositioned by one thread; afterwards different slots may be used
// from different threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace cntkio::image {

/// std::mt19937 that counts its outputs. A uniform random bit generator, so Boost's distributions take it.
class Engine {
 public:
  using result_type = std::mt19937::result_type;
  static constexpr result_type min() { return std::mt19937::min(); }
  static constexpr result_type max() { return std::mt19937::max(); }

  explicit Engine(result_type seed) : seed_(seed), engine_(seed) {}
  result_type operator()() {
    ++draws_;
    return engine_();
  }
  /// Outputs given since seeding.
  uint64_t draws() const { return draws_; }
  /// The state after `draws` outputs from the seed (re-seeds, then discards them: linear in `draws`).
  void reposition(uint64_t draws);

 private:
  result_type seed_;
  std::mt19937 engine_;
  uint64_t draws_ = 0;
};

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
  /// The outputs each engine has given, by slot (without the engines after the last one that has drawn).
  std::vector<uint64_t> draws() const;
  /// Puts engine j where it is after draws[j] outputs from its seed (creating engines up to draws.size());
  /// engines beyond draws.size() go back to their seed.
  void reposition(const std::vector<uint64_t>& draws);

 private:
  uint64_t seed_;
  std::vector<Engine> engines_;
};

}  // namespace cntkio::image
