// CNTK's flat HTK reader configs (`readerType = "HTKDeserializers"` or `"HTKMLFReader"`, with feature
// records holding `scpFile` and label records holding `mlfFile`/`mlfFileList`), turned into the equivalent
// composite `deserializers = (...)` reader section (spec htk.md §2.3).
#pragma once

#include <string>
#include <vector>

#include "cntkio/config.hpp"

namespace cntkio::pipeline {

/// Whether `reader_type` is one of CNTK's flat HTK readers (HTKDeserializers, Cntk.Deserializers.HTK,
/// HTKMLFReader; case-insensitive).
bool is_htk_legacy_reader(const std::string& reader_type);

/// A flat section as the composite reader reads it.
struct HtkLegacyReader {
  Config composite;  ///< the equivalent composite reader section
  /// CNTK's older truncated BPTT (`truncated = true` without `truncationLength`, or with 0): the number of
  /// parallel utterances of each epoch (`nbruttsineachrecurrentiter`, default 1; the last value repeats),
  /// each emitted the minibatch size at a time; `composite` then says `truncationLength = 0`. Empty
  /// otherwise.
  std::vector<size_t> bptt_slots_per_epoch;
};

/// The composite reader section equivalent to the flat section `reader`: one HTKFeatureDeserializer per
/// feature record (alphabetical; the first is primary), then one HTKMLFDeserializer per label record.
/// Applies the flat reader's own rules (frameMode defaults to true, `type = real`, `labelType = category`,
/// readMethod/randomize, maxSequenceSize and definesMBSize at the stream level, truncated BPTT without
/// truncationLength). Throws ConfigError, or FormatError with CNTK's text located in the config where a
/// conformance case compares that text.
HtkLegacyReader htk_legacy_to_composite(const Config& reader);

}  // namespace cntkio::pipeline
