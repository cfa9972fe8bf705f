/// @file
/// SkipReport: what a reader left out of its minibatches, so that nothing is lost silently.
///
/// Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cntkio {

/// What a reader skipped so far because maxErrors allowed it: nothing is lost silently. Counts cover the
/// reader's whole life (CTF chunks read again in a later sweep count again, as in CNTK).
struct SkipReport {
  uint64_t errors = 0;             ///< input errors tolerated by the deserializers (CTF `maxErrors`)
  uint64_t rows_skipped = 0;       ///< rows that gave no sample
  uint64_t samples_skipped = 0;    ///< samples dropped for bad names, values or dimensions
  uint64_t sequences_skipped = 0;  ///< sequences never delivered: invalid ones (reader `maxErrors`), ones
                                   ///< whose key a secondary deserializer lacks or holds twice
  std::vector<std::string> first_locations;  ///< the first few (up to 10 per deserializer) "file:line:column"

  /// True when nothing was skipped or tolerated.
  bool empty() const {
    return errors == 0 && rows_skipped == 0 && samples_skipped == 0 && sequences_skipped == 0;
  }
  /// One line: "skipped 1 row, 2 samples and 0 sequences (3 input errors tolerated under maxErrors); first
  /// at a.ctf:2:1, a.ctf:3:7" (the part in parentheses only when input errors were tolerated).
  std::string to_string() const;
};

}  // namespace cntkio
