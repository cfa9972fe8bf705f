// CNTK's reader-level config rules, shared by ReaderSpec::from_config and the stand-alone reader types the
// formats register (their register.cpp): precision, the execution settings, the order of a stand-alone
// reader, and the reader-wide defaults the formats' traits imply.
#pragma once

#include <cstddef>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/reader_spec.hpp"

namespace cntkio::spec_detail {

/// CNTK's randomizeAuto (2^62 - 1): the whole data as one window.
constexpr size_t kWholeDataWindow = (static_cast<size_t>(-1) >> 2);

/// Throws ConfigError unless `precision` is exactly "float" or "double" (CNTK compares case-sensitively).
void check_precision(const Config& reader);
/// The element type of `precision` (after check_precision).
ElementType precision_of(const Config& reader);

/// prefetch, loaderThreads, traceLevel and multiThreadedDeserialization of a reader section.
void read_execution_settings(const Config& reader, SourceOptions& source);

/// The order of CNTK's stand-alone readers: `randomize` (true, false or none), `randomizationWindow`
/// (default: `default_window_in_chunks` chunks), `sampleBasedRandomizationWindow` (default false),
/// `randomizationSeed`. Also: one global timeline and no invalid sequences tolerated.
void read_standalone_order(const Config& reader, SourceOptions& source, size_t default_window_in_chunks);

/// Resolves what SourceOptions leaves to the formats (the key mode, frames for an image deserializer
/// alone, the randomization window) from the traits of `deserializers`' types. `reader` is the reader
/// section when the spec comes from a config (a format's chunk window is computed from it), else null.
/// Throws ConfigError (located when `reader` is given) for combinations CNTK refuses.
void resolve_reader_defaults(SourceOptions& source, const std::vector<DeserializerSpec>& deserializers,
                             const Config* reader);

}  // namespace cntkio::spec_detail
