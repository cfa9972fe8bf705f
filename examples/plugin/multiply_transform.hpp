// The Multiply transform: every value of a dense stream times a constant.
#pragma once

#include <cntkio/transform.hpp>

namespace cntkio_npy {

/// A transformer of the dense stream `input` that multiplies every value by `factor`. Throws
/// cntkio::ConfigError for a sparse stream.
cntkio::SequenceTransformerPtr make_multiply_transformer(double factor, const cntkio::StreamInfo& input);

}  // namespace cntkio_npy
