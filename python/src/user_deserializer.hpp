// The Python UserDeserializer as a registered deserializer type (user_deserializer.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace cntkio::python {

/// The type name a UserDeserializer's DeserializerSpec carries.
extern const char* const kUserDeserializerType;

/// Registers the PythonUserDeserializer type with the process's registry (once, at import).
void register_user_deserializer_type();

/// Binds _core._user_deserializer_spec(adapter).
void bind_user_deserializer(pybind11::module_& m);

}  // namespace cntkio::python
