/// @file
/// The registry: deserializer, transform and stand-alone reader types by name. Every format of cntkio
/// registers itself here (src/formats/FORMAT/register.cpp), and so does a user's shared library, loaded for
/// a `module = "..."` (cntkio/plugin.hpp). The pipeline knows formats only through what they register.
///
/// Thread-safety: registration and lookups may run concurrently; a registered type is never removed.
/// Registering a name again replaces the earlier registration for later lookups.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/deserializer.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/keys.hpp"
#include "cntkio/reader_spec.hpp"
#include "cntkio/transform.hpp"

namespace cntkio {

/// Where a deserializer or transform section was written, for what it needs beyond the section itself.
struct ConfigContext {
  const Config* reader = nullptr;  ///< the reader section the deserializer section belongs to
  bool frame_mode = false;         ///< the reader's [frameMode]
  /// Compiles the `transforms = ([type = ...]:[...])` of a stream's block (empty when it has none), each
  /// element by its registered transform type, after loading the `module` the element names. Throws
  /// ConfigError at the element (unknown type, module not loadable). A plugin calls this, not
  /// find_transform_type: a host that links cntkio statically (the `cntkio` CLI) has its own registry,
  /// which the plugin's copy of libcntkio cannot see.
  std::function<std::vector<TransformSpec>(const Config& stream)> stream_transforms;
};

/// The reader-wide settings every deserializer of a reader obeys (from SourceOptions, resolved).
struct DeserializerContext {
  KeyTablePtr keys;                                ///< the sequence keys all deserializers share
  ElementType element_type = ElementType::kFloat;  ///< [precision]
  bool frame_mode = false;                         ///< the reader packs frames
  std::optional<int> trace_level;                  ///< [traceLevel] of the reader, if given there
  size_t max_errors = 0;                           ///< the reader's [maxErrors]
  bool alone = true;                               ///< the reader's only deserializer
};

/// What the pipeline must know of a deserializer type to apply CNTK's reader-wide defaults.
struct DeserializerTraits {
  bool string_keys_by_default = false;  ///< its keys are names (HTK): the reader's keys default to strings
  /// Alone and randomized, the reader packs frames with a window of one sample (ImageDeserializer).
  bool frames_when_alone_and_randomized = false;
  /// The randomization window, in chunks, when the reader gives none (CTF: 4 GiB of text); null: none.
  /// `reader` is the reader section when the spec comes from a config (CNTK reads the chunk size there),
  /// null for a spec built directly.
  std::function<size_t(const DeserializerSpec& spec, const Config* reader)> default_window_in_chunks;
};

/// A deserializer type.
struct DeserializerType {
  std::string name;  ///< the `type` it is registered as ("CNTKTextFormatDeserializer")
  std::vector<std::string>
      modules;  ///< CNTK's module names that provide it ("CNTKTextFormatReader"): no load
  /// Compiles its section of a composite reader into a spec (options and transforms). Throws ConfigError.
  std::function<DeserializerSpec(const Config& section, const ConfigContext& context)> spec_from_config;
  /// Makes the deserializer. Throws ConfigError (bad options), FormatError, IoError.
  std::function<std::shared_ptr<Deserializer>(const DeserializerSpec& spec,
                                              const DeserializerContext& context)>
      create;
  /// Completes a spec before `create` (e.g. the cast that ends an image stream's transforms); may be null.
  std::function<void(DeserializerSpec& spec, const DeserializerContext& context)> complete;
  DeserializerTraits traits;  ///< what the pipeline must know of it
};

/// The reader-wide settings a transform obeys.
struct TransformContext {
  ElementType element_type = ElementType::kFloat;                  ///< [precision]
  int trace_level = 1;                                             ///< 0 errors, 1 warnings, 2 info
  std::function<void(int level, std::string_view line)> log_sink;  ///< empty: stderr
};

/// A transform type: a change of the samples of one stream, of any deserializer whose items it accepts.
struct TransformType {
  std::string name;  ///< the `type` it is registered as ("Crop")
  /// Compiles its section (an element of a stream's `transforms`) into a spec. Throws ConfigError.
  std::function<TransformSpec(const Config& section)> spec_from_config;
  /// Makes the transformer of a stream described by `input` (what the transforms before it deliver).
  /// Throws ConfigError when it cannot work on that stream.
  std::function<SequenceTransformerPtr(const TransformSpec& spec, const StreamInfo& input,
                                       const TransformContext& context)>
      create;
};

/// A stand-alone reader type (`readerType = ...` with a flat reader section).
struct ReaderType {
  std::vector<std::string> names;  ///< the readerType spellings it answers to (case-insensitive)
  /// Compiles the flat reader section. Throws ConfigError.
  std::function<ReaderSpec(const Config& reader)> spec_from_config;
};

/// Registers a deserializer type (replacing one of the same name for later lookups).
void register_deserializer(DeserializerType type);
/// Registers a transform type (replacing one of the same name for later lookups).
void register_transform(TransformType type);
/// Registers a stand-alone reader type (checked before those registered earlier).
void register_reader_type(ReaderType type);

/// The registered type `name`, or null. The built-in formats are registered before the first lookup.
std::shared_ptr<const DeserializerType> find_deserializer_type(std::string_view name);
/// The registered transform type `name`, or null.
std::shared_ptr<const TransformType> find_transform_type(std::string_view name);
/// The reader type answering to `name` (case-insensitive), or null.
std::shared_ptr<const ReaderType> find_reader_type(std::string_view name);

/// Names of everything registered so far, sorted (for messages and `cntkio --version`).
std::vector<std::string> registered_deserializer_types();
/// Names of the registered transform types, sorted.
std::vector<std::string> registered_transform_types();
/// Every spelling of the registered reader types, sorted.
std::vector<std::string> registered_reader_types();

/// The options of `spec` as a `T` (a copy); T's defaults when the spec holds none. Throws UsageError naming
/// the type when the spec holds options of another type.
template <class T>
T options_of(const DeserializerSpec& spec, const char* options_name) {
  if (!spec.options.has_value()) return T{};
  if (const T* options = std::any_cast<T>(&spec.options)) return *options;
  throw UsageError("The options of a '" + spec.type + "' deserializer must be " + options_name + ".");
}
/// The options of a transform spec as a `T` (as for a deserializer spec above).
template <class T>
T options_of(const TransformSpec& spec, const char* options_name) {
  if (!spec.options.has_value()) return T{};
  if (const T* options = std::any_cast<T>(&spec.options)) return *options;
  throw UsageError("The options of a '" + spec.type + "' transform must be " + options_name + ".");
}

/// Loads the shared library `module` once per process and lets it register its types (cntkio/plugin.hpp).
/// Searched, in order: `config_directory` (the folder of the config that names it; may be empty), each
/// folder of the CNTKIO_PLUGIN_PATH environment variable (':'-separated), then the system's loader (its
/// own search path). In a folder, `lib<module>.so`, `<module>.so` and `<module>` are tried; a `module` with
/// a '/' is a path and is loaded as it is. Names of CNTK's own reader modules (CNTKTextFormatReader,
/// CNTKBinaryReader, HTKDeserializers, ImageReader, ...) load nothing. The first library found is taken.
/// Throws ConfigError naming the module and every place searched when no library loads, when the one taken
/// lacks the entry points or was built for another plugin ABI version, or when its registration throws;
/// UsageError for a name or folder holding a NUL byte.
void load_module(const std::string& module, const std::string& config_directory = {});

/// Whether `module` names one of CNTK's built-in reader modules (nothing to load).
bool is_builtin_module(std::string_view module);

}  // namespace cntkio
