// The types the cntkio_npy plugin registers, and their options: what a program that builds a
// cntkio::ReaderSpec with them includes (read_npy.cpp). The plugin itself is loaded at run time
// (cntkio::load_module, or `module = "cntkio_npy"` in a config).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cntkio_npy {

/// The deserializer type: NumPy .npy files, each one sequence.
inline constexpr const char* kDeserializerType = "NpySequenceDeserializer";
/// The transform type: multiplies every value of a dense stream by a constant.
inline constexpr const char* kMultiplyType = "Multiply";

/// The options of an NpySequenceDeserializer (config keys in brackets). Each file holds one sequence: a
/// C-ordered 2-D array of shape (samples, dim), little-endian float32 ('<f4') or float64 ('<f8'), in .npy
/// format 1.0, 2.0 or 3.0. Its key is the file's name without ".npy".
struct NpyOptions {
  std::vector<std::string> files;   ///< [files] the files, in this order; or, when empty:
  std::string folder;               ///< [folder] every *.npy file of the folder, sorted by name
  std::string stream = "features";  ///< [input.NAME] the name of the one stream
  size_t dim = 0;                   ///< [input.NAME.dim] values per sample: every file's second dimension
  size_t files_per_chunk = 8;       ///< [filesPerChunk] sequences per chunk (the unit of loading)
};

/// The options of a Multiply transform.
struct MultiplyOptions {
  double factor = 1;  ///< [factor] what every value is multiplied by
};

}  // namespace cntkio_npy
