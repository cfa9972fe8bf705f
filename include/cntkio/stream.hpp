/// @file
/// StreamInfo: the description of one named stream (input) of a deserializer or a minibatch source.
///
/// Thread-safety: plain value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cntkio {

/// How the samples of a stream are stored.
enum class StorageFormat : uint8_t {
  kDense,      ///< every sample is `dim` contiguous values
  kSparseCsc,  ///< every sample is a list of (index, value) pairs with index < dim
};

/// Element type of the values of a stream (CNTK's `precision`).
enum class ElementType : uint8_t {
  kFloat,  ///< 32-bit IEEE float
  kDouble  ///< 64-bit IEEE double
};

/// Size in bytes of one value of `type`.
constexpr size_t element_size(ElementType type) {
  return type == ElementType::kFloat ? 4 : 8;
}
/// "float" or "double".
const char* to_string(ElementType type);
/// "dense" or "sparse".
const char* to_string(StorageFormat format);

/// One named stream.
struct StreamInfo {
  uint32_t id = 0;                                 ///< position among the streams of its owner
  std::string name;                                ///< name exposed to users (config block name)
  std::string alias;                               ///< name inside the data file (CTF `|alias`)
  StorageFormat storage = StorageFormat::kDense;   ///< dense or sparse CSC
  ElementType element_type = ElementType::kFloat;  ///< float or double
  std::vector<size_t> sample_shape;                ///< CTF/CBF: {dim}
  bool defines_mb_size = false;  ///< whether this stream's sample count is the sequence length

  /// Number of values of a dense sample (product of sample_shape).
  size_t sample_dim() const {
    size_t n = 1;
    for (size_t d : sample_shape) n *= d;
    return n;
  }
};

}  // namespace cntkio
