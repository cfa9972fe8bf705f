// Bundler: joins several deserializers by sequence key (CNTK's Bundler, spec pipeline.md §6.2). The first
// deserializer is the primary and defines chunking; every other one is looked up by key.
#pragma once

#include <memory>
#include <vector>

#include "cntkio/deserializer.hpp"

namespace cntkio::pipeline {

/// Joins `deserializers` (at least 2). Throws Error if no primary sequence is found in every secondary.
std::shared_ptr<Deserializer> make_bundler(std::vector<std::shared_ptr<Deserializer>> deserializers);

}  // namespace cntkio::pipeline
