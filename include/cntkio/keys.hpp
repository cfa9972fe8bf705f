/// @file
/// KeyTable: the sequence keys shared by the deserializers of one reader (CNTK's CorpusDescriptor).
///
/// Deserializers describe sequences by a 64-bit id; the table maps the key text found in files to that id and
/// back. Modes (spec pipeline.md §6.1):
/// - numeric (default): the key is a decimal number (`sscanf("%llu")` rules), the id is its value;
/// - string: ids 0, 1, 2, ... in order of first appearance across all deserializers of the reader;
/// - hashed: the id is CNTK's 64-bit hash of the key (h = 5381; h = h*33 XOR sign-extended byte).
///
/// Thread-safety: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cntkio {

/// How sequence key text becomes a 64-bit id (see above).
enum class KeyMode : uint8_t {
  kNumeric,  ///< the key is a decimal number, the id its value
  kString,   ///< ids 0, 1, 2, ... in order of first appearance
  kHashed    ///< the id is CNTK's 64-bit hash of the key
};

/// The sequence keys of one reader, shared by its deserializers (see above).
class KeyTable {
 public:
  /// An empty table of the given mode.
  explicit KeyTable(KeyMode mode = KeyMode::kNumeric) : mode_(mode) {}

  /// The table's mode.
  KeyMode mode() const { return mode_; }
  /// Whether the mode is KeyMode::kNumeric.
  bool is_numeric() const { return mode_ == KeyMode::kNumeric; }

  /// The id of `key`. Numeric mode: leading blanks and a sign are accepted, trailing text is ignored, no
  /// digit at all throws FormatError("Invalid numeric sequence id ..."). String/hashed: registers the key.
  uint64_t id_of(std::string_view key);
  /// The id of `key` if it is already known (string/hashed mode), without registering it.
  bool try_find(std::string_view key, uint64_t& id) const;
  /// The key text of `id` (numeric: its decimal form; otherwise the registered text, or "#<id>" if unknown).
  std::string key_of(uint64_t id) const;

  /// CNTK's hash of a key (version 1).
  static uint64_t hash(std::string_view key);

 private:
  KeyMode mode_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, uint64_t> ids_;
  std::vector<std::string> strings_;                  // string mode: id -> key
  std::unordered_map<uint64_t, std::string> hashed_;  // hashed mode: id -> key
};

/// A key table shared by the deserializers of one reader.
using KeyTablePtr = std::shared_ptr<KeyTable>;

}  // namespace cntkio
