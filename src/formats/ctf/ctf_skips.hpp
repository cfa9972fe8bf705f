// What a CTF deserializer's maxErrors let it skip, as part of a SkipReport (the pipeline's skip report, and
// the converters' summaries).
#pragma once

#include "cntkio/deserializer.hpp"
#include "cntkio/minibatch_source.hpp"

namespace cntkio::ctf {

/// Adds the input errors, rows and samples `deserializer` skipped, and their first locations, to `report`
/// when it is a CTF deserializer; nothing for the others, which tolerate no input errors.
void add_skips(const Deserializer& deserializer, SkipReport& report);

}  // namespace cntkio::ctf
