// A chunk that holds some of the sequences of another chunk, found by their index there: what a
// deserializer's load_sequences returns around the chunk it parsed from those sequences alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cntkio/errors.hpp"
#include "cntkio/sequence.hpp"

namespace cntkio::core {

class SubsetChunk final : public Chunk {
 public:
  /// `parsed` holds, as its sequence k, sequence `indices_in_chunk[k]` of the whole chunk (ascending).
  SubsetChunk(ChunkPtr parsed, std::vector<uint32_t> indices_in_chunk)
      : parsed_(std::move(parsed)), indices_(std::move(indices_in_chunk)) {}

  void get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const override {
    parsed_->get_sequence(local(index_in_chunk), out);
  }
  void prefetch_sequence(uint32_t index_in_chunk) const override {
    const auto it = std::lower_bound(indices_.begin(), indices_.end(), index_in_chunk);
    if (it != indices_.end() && *it == index_in_chunk) {
      parsed_->prefetch_sequence(static_cast<uint32_t>(it - indices_.begin()));
    }
  }

 private:
  uint32_t local(uint32_t index_in_chunk) const {
    const auto it = std::lower_bound(indices_.begin(), indices_.end(), index_in_chunk);
    if (it == indices_.end() || *it != index_in_chunk) {
      throw Error("Sequence " + std::to_string(index_in_chunk) +
                  " was not loaded with the chunk's other sequences that were asked for.");
    }
    return static_cast<uint32_t>(it - indices_.begin());
  }

  ChunkPtr parsed_;
  std::vector<uint32_t> indices_;
};

}  // namespace cntkio::core
