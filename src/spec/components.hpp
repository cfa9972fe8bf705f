// The format components: formats built as shared modules beside the library (the image format,
// cntkio_image.so) and loaded the first time one of their names is looked up in the registry, so that a
// process that never reads their data never loads their libraries (OpenCV, libzip, libturbojpeg).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cntkio::spec_detail {

/// The kinds of names the registry looks up.
enum class NameKind { kDeserializer, kTransform, kReader };

/// When `name` (of `kind`; reader names case-insensitively) is provided by a component that is not loaded
/// yet, loads it (its types are then registered, without replacing names registered before) and returns
/// true; false otherwise. Throws IoError naming the component and every place it was looked for when it
/// cannot be loaded. Thread-safe; a component is loaded once per process.
bool load_component_providing(NameKind kind, std::string_view name);

/// The names of `kind` that the components not loaded yet provide (for the lists of supported names).
std::vector<std::string> unloaded_component_names(NameKind kind);

/// Whether the registry is registering a component's types now (on this thread): then a name registered
/// before (a plugin's) is kept.
bool registering_component();

}  // namespace cntkio::spec_detail
