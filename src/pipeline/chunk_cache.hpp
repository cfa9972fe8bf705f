// The cache of decoded chunks (SourceOptions::chunk_cache_bytes, beyond CNTK): a Deserializer in front of
// the reader's (joined) deserializer that keeps the chunks it loads, up to a budget of data bytes, and
// answers later loads of the same chunk with them, so that later sweeps skip the parse. A loaded chunk is
// immutable (cntkio/sequence.hpp), so a kept one delivers exactly what a new parse would; transforms run
// after the randomizer and so still run on every sweep.
//
// Admission: the first chunks that fit are kept, none is evicted. A randomized reader uses every chunk once
// per sweep, so replacing chunks (LRU) would only parse as often and copy more; keeping a fixed set saves
// the same parses every sweep.
//
// Staleness: when a kept chunk is asked for again after its last use since the previous check (a new sweep,
// or a restore), the data files' identities (Env::file_identity) are compared with those seen when the
// chunks were kept; any difference drops the whole cache, and the loads go to the deserializer, which does
// what it does for a changed file without a cache. A deserializer that lists no input files is not cached.
//
// Errors tolerated under maxErrors are counted by the deserializer on every parse (CNTK's budget is never
// reset), so a chunk whose load counted one is not kept: the counts and the reader's failure once the budget
// is spent stay as without the cache. (A format may tolerate errors under options of its own: the skip report
// is compared around every load.)
//
// Thread-safety: load_chunk may be called from several threads at once (for different chunks), as the
// Deserializer contract allows; the rest forwards to the wrapped deserializer.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "cntkio/minibatch_source.hpp"
#include "core/forwarding_deserializer.hpp"

namespace cntkio::pipeline {

class CachingDeserializer final : public core::ForwardingDeserializer {
 public:
  CachingDeserializer(std::shared_ptr<Deserializer> inner, uint64_t budget_bytes);

  ChunkPtr load_chunk(uint32_t chunk_id) override;

  SourceStats::ChunkCache stats() const;
  /// The bytes of data `chunk` holds (values, sparse indices and counts of each stream of each sequence):
  /// what the budget counts.
  uint64_t data_bytes(const Chunk& chunk, uint32_t chunk_id) const;

 private:
  struct Entry {
    ChunkPtr chunk;
    uint64_t bytes = 0;
    uint64_t used_in_check = 0;  // the check period in which it was last handed out
  };
  uint64_t tolerated_errors() const;
  bool inputs_unchanged() const;  // with mutex_ held
  void drop_all();                // with mutex_ held

  const uint64_t budget_;
  bool enabled_ = false;
  std::vector<InputFileVersion> seen_;  // the files' identities the kept chunks were parsed from

  mutable std::mutex mutex_;
  std::unordered_map<uint32_t, Entry> entries_;
  uint64_t bytes_ = 0;
  uint64_t check_period_ = 0;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
  uint64_t invalidations_ = 0;
};

}  // namespace cntkio::pipeline
