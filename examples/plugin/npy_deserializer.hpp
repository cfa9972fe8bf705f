// The NpySequenceDeserializer: a list of .npy files, one sequence each, in chunks of several files.
#pragma once

#include <cntkio/deserializer.hpp>
#include <cntkio/registry.hpp>
#include <memory>

#include "npy_plugin.hpp"

namespace cntkio_npy {

/// Indexes the files of `options` (reads every header) and returns the deserializer. Keys: each file's
/// name without ".npy", through the reader's key table. Throws cntkio::ConfigError (no files, dim 0),
/// cntkio::IoError and cntkio::FormatError (a header, a second dimension other than `dim`, a key twice).
std::shared_ptr<cntkio::Deserializer> make_npy_deserializer(const NpyOptions& options,
                                                            const cntkio::DeserializerContext& context);

}  // namespace cntkio_npy
