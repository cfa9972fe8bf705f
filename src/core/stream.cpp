#include "cntkio/stream.hpp"

namespace cntkio {

const char* to_string(ElementType type) {
  return type == ElementType::kFloat ? "float" : "double";
}
const char* to_string(StorageFormat format) {
  return format == StorageFormat::kDense ? "dense" : "sparse";
}

}  // namespace cntkio
