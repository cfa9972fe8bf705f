// CNTK's image transforms (spec image.md §8–§9) and the transformer that runs them for an image stream.
//
// The transformer takes the NativeImage of a sequence (decoding it if needed), applies the configured
// transforms in order on an OpenCV matrix (uint8 until a transform needs floating point), and finishes with
// CNTK's Cast to the stream's element type. Random transforms (Crop, Color, Intensity) keep one engine per
// batch slot, seeded seed + slot and never reseeded.
//
// Thread-safety: see SequenceTransformer (cntkio/transform.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cntkio/image.hpp"
#include "cntkio/transform.hpp"
#include "core/logger.hpp"

namespace cntkio::image {

/// The transformer of image stream `stream_name` (described by `input`): `transforms` in order, then a cast
/// to `element_type`. Reads the eigen and mean files now; throws FormatError/ConfigError for bad files or
/// settings.
SequenceTransformerPtr make_image_transformer(const std::vector<ImageTransformOptions>& transforms,
                                              ElementType element_type, const std::string& stream_name,
                                              std::shared_ptr<core::Logger> logger,
                                              const StreamInfo& input = StreamInfo{});

/// Throws ConfigError (keyed by the CNTK config key, unlocated) for options out of their ranges (a crop ratio
/// outside (0, 1], an empty or oversized scale, a colour radius outside [0, 1], ...). Both the config route
/// (located) and transforms built from typed options (TransformSpec) check through it.
void check_transform_options(const ImageTransformOptions& options);

/// Registers the transform types Crop, Scale, Color, Intensity, Mean, Transpose and Cast.
void register_image_transforms();

}  // namespace cntkio::image
