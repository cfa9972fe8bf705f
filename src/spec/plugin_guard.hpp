// Checks on what a plugin's deserializers and transforms deliver (types registered by a shared library
// loaded for `module`). The built-in formats validate their input themselves; a plugin's code is trusted
// only as far as the contract of cntkio/deserializer.hpp and cntkio/transform.hpp, so the pipeline would
// otherwise pack a sparse index past the stream's dimension (writing outside the minibatch's buffers) or a
// sequence longer than its index said. Each check names the type and the module.
#pragma once

#include <string>

#include "cntkio/registry.hpp"

namespace cntkio::spec_detail {

/// `type` with its create function wrapped: the deserializer it makes is checked as it is used.
DeserializerType guard_plugin_deserializer_type(DeserializerType type, const std::string& module);

/// `type` with its create function wrapped: the transformer it makes is checked as it is used.
TransformType guard_plugin_transform_type(TransformType type, const std::string& module);

}  // namespace cntkio::spec_detail
