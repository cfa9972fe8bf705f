#include "pipeline/random.hpp"

namespace cntkio::pipeline {

void reseed(RandomEngine& engine, uint64_t seed) {
  engine.seed(static_cast<RandomEngine::result_type>(seed));
}

}  // namespace cntkio::pipeline
