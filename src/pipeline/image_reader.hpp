// The legacy stand-alone image reader (`readerType = "ImageReader"`, spec image.md §2.3): one
// ImageDeserializer with string keys, the fixed transform chain, a block randomizer with a window of one
// sample (or none for `randomize = none`) and frame packing.
#pragma once

#include <memory>

#include "cntkio/config.hpp"
#include "pipeline/packer.hpp"
#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline {

struct ReaderParts {
  std::shared_ptr<SequenceEnumerator> enumerator;
  std::unique_ptr<Packer> packer;
};

/// Builds the legacy image reader from its reader section; `threads` (> 1) load chunks and transform the
/// images of a minibatch in parallel (same results). Throws ConfigError, FormatError, IoError.
ReaderParts make_image_reader(const Config& reader, size_t threads);

}  // namespace cntkio::pipeline
