// The options of the test plugin's types (test_plugin.cpp), shared with the tests that build ReaderSpecs.
#pragma once

#include <cstdint>
#include <string>

namespace cntkio_test_plugin {

/// The deserializer: `sequences` sequences of `length` samples of one dense stream of dimension 2; sample t
/// of the sequence with key k is {10 k + t, -(10 k + t)}. Four sequences per chunk.
struct Options {
  uint64_t sequences = 4;    ///< [sequences]
  uint32_t length = 2;       ///< [length]
  std::string stream = "x";  ///< [stream]
  /// [fail] "load": loading chunk 1 throws a FormatError located in the file "test-plugin-data".
  std::string fail;
};

/// The transform: adds `amount` to every value.
struct AddOptions {
  double amount = 0;  ///< [amount]
};

}  // namespace cntkio_test_plugin
