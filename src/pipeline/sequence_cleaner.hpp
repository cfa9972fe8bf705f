// SequenceCleaner: drops sequences whose data could not be produced (CNTK's SequenceCleaner, ReaderUtil.h).
//
// A sequence with an invalid item in any stream is removed from all streams. Removed sequences are counted
// over the cleaner's lifetime; once the count exceeds the allowed maximum, clean() throws (CNTK throws only
// for a batch that still has data).
//
// Thread-safety: clean() is for one thread (the randomizer's); removed() and first_removed_keys() may be
// read from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline {

class SequenceCleaner {
 public:
  explicit SequenceCleaner(size_t max_invalid_sequences) : max_invalid_(max_invalid_sequences) {}

  /// Removes invalid sequences from `sequences` in place (keeping the order of the others); `names` gives
  /// the keys' text and locations. Throws FormatError (naming the last sequence removed) if more than the
  /// maximum have been removed so far.
  void clean(Sequences& sequences, const Deserializer& names);
  /// clean() in two steps, for sequences fetched on other threads (SequenceEnumerator::defer_fetch):
  /// remove_invalid() removes them, recording their keys in sequences.invalid_removed (any thread, no
  /// state); count() then counts them, in delivery order, and throws as clean() does.
  static void remove_invalid(Sequences& sequences);
  void count(const std::vector<SequenceKey>& removed, const Deserializer& names);

  /// Number of sequences removed so far (may be read from another thread).
  size_t removed() const { return removed_.load(std::memory_order_relaxed); }
  /// The keys of the first sequences removed (up to 10).
  std::vector<std::string> first_removed_keys() const;

 private:
  static constexpr size_t kKeysKept = 10;
  size_t max_invalid_;
  std::atomic<size_t> removed_{0};
  mutable std::mutex keys_mutex_;
  std::vector<std::string> first_keys_;
  SequenceKey last_removed_;  // the last sequence removed (clean()'s thread only)
  std::string last_key_;      // its text
};

}  // namespace cntkio::pipeline
