// The Python UserDeserializer as a registered deserializer type (user_deserializer.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include "cntkio/errors.hpp"

namespace cntkio::python {

/// A Python exception of a built-in kind that user code raised on a loader thread and that must reach the
/// caller as that kind (MemoryError, KeyboardInterrupt, SystemExit), not as a data error. Carried as text so
/// that it can be raised again each time the failed load is asked for.
class PythonBuiltinError : public Error {
 public:
  PythonBuiltinError(PyObject* type, const std::string& message) : Error(message), type_(type) {}
  PyObject* type() const { return type_; }  // a built-in exception type (never freed)

 private:
  PyObject* type_;
};

/// The type name a UserDeserializer's DeserializerSpec carries.
extern const char* const kUserDeserializerType;

/// Registers the PythonUserDeserializer type with the process's registry (once, at import).
void register_user_deserializer_type();

/// Binds _core._user_deserializer_spec(adapter).
void bind_user_deserializer(pybind11::module_& m);

}  // namespace cntkio::python
