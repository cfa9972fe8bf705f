// SequenceCleaner: drops sequences whose data could not be produced (CNTK's SequenceCleaner, ReaderUtil.h).
//
// A sequence with an invalid item in any stream is removed from all streams. Removed sequences are counted
// over the cleaner's lifetime; once the count exceeds the allowed maximum, a batch that still has data
// throws.
//
// Thread-safety: none; owned by one randomizer.
#pragma once

#include <cstddef>

#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline {

class SequenceCleaner {
 public:
  explicit SequenceCleaner(size_t max_invalid_sequences) : max_invalid_(max_invalid_sequences) {}

  /// Removes invalid sequences from `sequences` in place (keeping the order of the others).
  /// Throws Error if more than the maximum have been removed so far and `sequences` is not left empty.
  void clean(Sequences& sequences);

  /// Number of sequences removed so far.
  size_t removed() const { return removed_; }

 private:
  size_t max_invalid_;
  size_t removed_ = 0;
};

}  // namespace cntkio::pipeline
