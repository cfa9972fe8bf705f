#include "formats/image/image_random.hpp"

#include <boost/random/normal_distribution.hpp>
#include <limits>

namespace cntkio::image {

double uniform_real(Engine& engine, double a, double b) {
  // Boost's generate_uniform_real for an integral engine: (draw - min) / (max - min + 1) scaled to [a, b).
  constexpr double kDivisor = 4294967296.0;  // engine range + 1
  for (;;) {
    const double numerator = static_cast<double>(engine());
    const double result = numerator / kDivisor * (b - a) + a;
    if (result < b) return result;
  }
}

int uniform_int(Engine& engine, int lo, int hi) {
  const uint32_t range = static_cast<uint32_t>(static_cast<int64_t>(hi) - lo);
  if (range == 0) return lo;
  constexpr uint32_t kEngineRange = std::numeric_limits<uint32_t>::max();
  if (range == kEngineRange) return static_cast<int>(static_cast<int64_t>(lo) + engine());
  uint32_t bucket = kEngineRange / (range + 1);
  if (kEngineRange % (range + 1) == range) ++bucket;
  for (;;) {
    const uint32_t q = static_cast<uint32_t>(engine()) / bucket;
    if (q <= range) return static_cast<int>(static_cast<int64_t>(lo) + q);
  }
}

bool bernoulli_half(Engine& engine) {
  return static_cast<double>(engine()) <= 0.5 * 4294967295.0;
}

float normal_float(Engine& engine, float sigma) {
  boost::random::normal_distribution<float> distribution(0.0f, sigma);
  return distribution(engine);
}

void Engine::reposition(uint64_t draws) {
  if (draws < draws_) {
    engine_.seed(seed_);
    draws_ = 0;
  }
  engine_.discard(draws - draws_);
  draws_ = draws;
}

std::vector<uint64_t> EngineSet::draws() const {
  std::vector<uint64_t> out;
  out.reserve(engines_.size());
  for (const Engine& e : engines_) out.push_back(e.draws());
  while (!out.empty() && out.back() == 0) out.pop_back();
  return out;
}

void EngineSet::reposition(const std::vector<uint64_t>& draws) {
  grow(draws.size());
  for (size_t j = 0; j < engines_.size(); ++j) engines_[j].reposition(j < draws.size() ? draws[j] : 0);
}

void EngineSet::grow(size_t n) {
  engines_.reserve(n);
  while (engines_.size() < n) {
    engines_.emplace_back(static_cast<Engine::result_type>(seed_ + engines_.size()));
  }
}

}  // namespace cntkio::image
