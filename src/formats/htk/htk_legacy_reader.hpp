// The flat HTK reader types (`readerType = "HTKDeserializers"`, `"Cntk.Deserializers.HTK"`, `"HTKMLFReader"`)
// compiled into a reader spec (htk_legacy_reader.cpp).
#pragma once

#include "cntkio/config.hpp"
#include "cntkio/reader_spec.hpp"

namespace cntkio::htk {

/// The reader spec of a flat HTK reader section. Throws ConfigError (located in the section).
ReaderSpec legacy_reader_spec(const Config& reader);

}  // namespace cntkio::htk
