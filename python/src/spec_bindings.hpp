// The reader spec types of cntkio/reader_spec.hpp and the typed options of the built-in formats as Python
// classes of cntkio._core, so that the Python package describes readers with values instead of config text.
#pragma once

#include <pybind11/pybind11.h>

namespace cntkio::python {

/// Adds ReaderSpec, SourceOptions, DeserializerSpec, StreamTransforms, TransformSpec, their enums and the
/// option classes of the built-in deserializer and transform types to `m`.
void bind_reader_spec(pybind11::module_& m);

}  // namespace cntkio::python
