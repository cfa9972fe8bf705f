// Deserializer registry: config `type` name → factory. Adding a format = one line here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/deserializer.hpp"

namespace cntkio::pipeline {

/// Creates the deserializer of composite type `type` (e.g. "CNTKTextFormatDeserializer") from its section.
/// Throws ConfigError for unknown types.
std::shared_ptr<Deserializer> create_deserializer(const std::string& type, const Config& section);

/// Composite deserializer type for a stand-alone `readerType` (e.g. CNTKTextFormatReader →
/// CNTKTextFormatDeserializer), or empty if the reader type is unknown.
std::string deserializer_type_for_reader(const std::string& reader_type);

/// Names accepted by create_deserializer, for error messages.
std::vector<std::string> known_deserializer_types();

}  // namespace cntkio::pipeline
