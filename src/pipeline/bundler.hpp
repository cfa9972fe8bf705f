// Bundler: joins several deserializers by sequence key (CNTK's Bundler, spec pipeline.md §6.2). The first
// deserializer is the primary and defines chunking; every other one is looked up by key.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cntkio/deserializer.hpp"

namespace cntkio::pipeline {

/// Joins `deserializers` (at least 2). Throws Error if no primary sequence is found in every secondary.
std::shared_ptr<Deserializer> make_bundler(std::vector<std::shared_ptr<Deserializer>> deserializers);

/// Primary sequences a bundler left out because a secondary has no sequence with their key (CNTK drops them
/// without a word; cntkio reports them through MinibatchSource::skip_report).
struct BundlerDrops {
  uint64_t sequences = 0;
  std::vector<std::string> first_keys;  ///< the first 10 keys left out (a key once for all its frames)
};
/// The drops of `deserializer` if it came from make_bundler; nothing otherwise.
BundlerDrops bundler_drops(const Deserializer& deserializer);

}  // namespace cntkio::pipeline
