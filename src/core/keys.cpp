#include "cntkio/keys.hpp"

#include "cntkio/errors.hpp"

namespace cntkio {

uint64_t KeyTable::hash(std::string_view key) {
  uint64_t h = 5381;
  for (char c : key) {
    // CNTK's char is signed: bytes >= 0x80 are sign-extended to 64 bits before the XOR.
    h = (h * 33) ^ static_cast<uint64_t>(static_cast<int64_t>(static_cast<signed char>(c)));
  }
  return h;
}

uint64_t KeyTable::id_of(std::string_view key) {
  if (mode_ == KeyMode::kNumeric) {
    size_t i = 0;
    while (i < key.size() && (key[i] == ' ' || (key[i] >= '\t' && key[i] <= '\r'))) ++i;
    bool negative = false;
    if (i < key.size() && (key[i] == '+' || key[i] == '-')) negative = key[i++] == '-';
    size_t digits_begin = i;
    uint64_t value = 0;
    while (i < key.size() && key[i] >= '0' && key[i] <= '9') {
      uint64_t digit = static_cast<uint64_t>(key[i] - '0');
      // strtoull saturates on overflow; sscanf("%llu") uses it.
      value = value > (UINT64_MAX - digit) / 10 ? UINT64_MAX : value * 10 + digit;
      ++i;
    }
    if (i == digits_begin) {
      SourceLocation where;
      where.sequence_key = std::string(key);
      throw FormatError("Invalid numeric sequence id '" + std::string(key) + "'", where);
    }
    return negative ? static_cast<uint64_t>(-static_cast<int64_t>(value)) : value;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ids_.find(std::string(key));
  if (it != ids_.end()) return it->second;
  uint64_t id;
  if (mode_ == KeyMode::kString) {
    id = strings_.size();
    strings_.emplace_back(key);
  } else {
    id = hash(key);
    hashed_.emplace(id, std::string(key));
  }
  ids_.emplace(std::string(key), id);
  return id;
}

bool KeyTable::try_find(std::string_view key, uint64_t& id) const {
  if (mode_ == KeyMode::kNumeric) {
    id = const_cast<KeyTable*>(this)->id_of(key);
    return true;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ids_.find(std::string(key));
  if (it == ids_.end()) return false;
  id = it->second;
  return true;
}

std::string KeyTable::key_of(uint64_t id) const {
  if (mode_ == KeyMode::kNumeric) return std::to_string(id);
  std::lock_guard<std::mutex> lock(mutex_);
  if (mode_ == KeyMode::kString) {
    if (id < strings_.size()) return strings_[id];
  } else {
    auto it = hashed_.find(id);
    if (it != hashed_.end()) return it->second;
  }
  return "#" + std::to_string(id);
}

}  // namespace cntkio
