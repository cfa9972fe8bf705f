/// @file
/// Plugins: a shared library that registers deserializer and transform types, loaded when a config names it
/// in `module = "..."` (as CNTK loads a reader module) or through load_module().
///
/// A plugin defines one function that registers its types and names it in CNTKIO_PLUGIN:
/// @code
///   #include <cntkio/plugin.hpp>
///   static void register_types(cntkio::PluginRegistrar& registrar) {
///     registrar.add_deserializer(my_deserializer_type());
///     registrar.add_transform(my_transform_type());
///   }
///   CNTKIO_PLUGIN(register_types)
/// @endcode
/// The macro defines the two C entry points cntkio looks up: `cntkio_plugin_abi_version`, which must return
/// the CNTKIO_PLUGIN_ABI_VERSION cntkio was built with (else the load is refused before anything runs), and
/// `cntkio_plugin_register`. A plugin is built against the installed package (`find_package(cntkio)`), with
/// the same compiler and standard library as cntkio (its types cross the boundary as C++ objects).
/// examples/plugin is a complete one; docs/writing-a-deserializer.md walks through it.
///
/// Thread-safety: a module is loaded once per process; loads are serialized.
#pragma once

#include "cntkio/registry.hpp"
#include "cntkio/version.hpp"

/// The layout of the types a plugin and cntkio exchange. A plugin built for another version is refused.
#define CNTKIO_PLUGIN_ABI_VERSION 1

namespace cntkio {

/// What a plugin registers its types with (the registry of the process that loads it).
class PluginRegistrar {
 public:
  virtual ~PluginRegistrar() = default;
  /// Registers a deserializer type (as register_deserializer).
  virtual void add_deserializer(DeserializerType type) = 0;
  /// Registers a transform type (as register_transform).
  virtual void add_transform(TransformType type) = 0;
  /// Registers a stand-alone reader type (as register_reader_type).
  virtual void add_reader_type(ReaderType type) = 0;
};

}  // namespace cntkio

/// Defines the entry points of a plugin whose types `register_function(cntkio::PluginRegistrar&)` registers.
#define CNTKIO_PLUGIN(register_function)                                              \
  extern "C" __attribute__((visibility("default"))) int cntkio_plugin_abi_version() { \
    return CNTKIO_PLUGIN_ABI_VERSION;                                                 \
  }                                                                                   \
  extern "C" __attribute__((visibility("default"))) void cntkio_plugin_register(      \
      ::cntkio::PluginRegistrar& registrar) {                                         \
    register_function(registrar);                                                     \
  }
