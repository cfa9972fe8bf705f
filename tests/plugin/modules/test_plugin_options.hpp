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
  /// [fail] what the plugin gets wrong:
  ///   "load"         loading chunk 1 throws a FormatError located in the file "test-plugin-data";
  ///   "throw"        loading chunk 1 throws a std::runtime_error;
  ///   "long"         every sequence delivers one sample more than its listed length;
  ///   "short"        every sequence delivers one sample less than its listed length;
  ///   "sparse"       the stream is sparse (one entry per sample, at index t % 2): nothing wrong;
  ///   "sparse_oob"   the same, but the last sample of each sequence has the index 2, past the dimension.
  std::string fail;
};

/// The transform: adds `amount` to every value.
struct AddOptions {
  double amount = 0;           ///< [amount]
  bool adds_a_sample = false;  ///< [addsASample] the result has one sample more than its input (wrong)
};

}  // namespace cntkio_test_plugin
