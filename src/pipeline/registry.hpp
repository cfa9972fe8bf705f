// Deserializer registry: config `type` name → factory. Adding a format = one line here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/deserializer.hpp"
#include "cntkio/keys.hpp"

namespace cntkio::pipeline {

/// What every deserializer of one reader shares.
struct DeserializerContext {
  KeyTablePtr keys = std::make_shared<KeyTable>();  ///< sequence key table (numeric by default)
  size_t max_errors = 0;  ///< the reader's maxErrors, for deserializers that count skipped data against it
};

/// Creates the deserializer of composite type `type` (e.g. "CNTKTextFormatDeserializer") from its section.
/// Throws ConfigError for unknown types.
std::shared_ptr<Deserializer> create_deserializer(const std::string& type, const Config& section,
                                                  const DeserializerContext& context);

/// Whether deserializers of `type` default the reader to string keys (CNTK: HTK deserializers do).
bool prefers_string_keys(const std::string& type);

/// Composite deserializer type for a stand-alone `readerType` (e.g. CNTKTextFormatReader →
/// CNTKTextFormatDeserializer), or empty if the reader type is unknown.
std::string deserializer_type_for_reader(const std::string& reader_type);

/// Names accepted by create_deserializer, for error messages.
std::vector<std::string> known_deserializer_types();

}  // namespace cntkio::pipeline
