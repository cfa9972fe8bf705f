#include "pipeline/sequence_cleaner.hpp"

#include <string>

#include "cntkio/errors.hpp"

namespace cntkio::pipeline {

void SequenceCleaner::clean(Sequences& sequences, const Deserializer& names) {
  remove_invalid(sequences);
  count(sequences.invalid_removed, names);
  sequences.invalid_removed.clear();
}

void SequenceCleaner::remove_invalid(Sequences& sequences) {
  const size_t n = sequences.num_sequences();
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    bool valid = true;
    for (const auto& stream : sequences.data) valid = valid && stream[i].valid;
    if (!valid) {
      sequences.invalid_removed.push_back(sequences.keys[i]);
      continue;
    }
    if (kept != i) {
      for (auto& stream : sequences.data) stream[kept] = stream[i];
      sequences.keys[kept] = sequences.keys[i];
      sequences.chunk_ids[kept] = sequences.chunk_ids[i];
    }
    ++kept;
  }
  if (kept != n) {
    for (auto& stream : sequences.data) stream.resize(kept);
    sequences.keys.resize(kept);
    sequences.chunk_ids.resize(kept);
  }
}

void SequenceCleaner::count(const std::vector<SequenceKey>& removed, const Deserializer& names) {
  for (const SequenceKey& key : removed) {
    last_removed_ = key;
    last_key_ = names.key_to_string(key);
    std::lock_guard<std::mutex> lock(keys_mutex_);
    if (first_keys_.size() < kKeysKept) first_keys_.push_back(last_key_);
  }
  removed_ += removed.size();
  // CNTK checks only batches that keep some data, so sequences dropped at the end of a sweep, or from a
  // file whose sequences are all invalid, vanish with a warning. cntkio checks every batch
  // (docs/differences-from-cntk.md).
  if (removed_ > max_invalid_) {
    SourceLocation where = names.sequence_location(last_removed_);
    where.sequence_key = last_key_;
    throw FormatError("Number of invalid sequences '" + std::to_string(removed_) +
                          "' in the input exceeded the specified maximum number '" +
                          std::to_string(max_invalid_) + "'",
                      std::move(where),
                      "(raise maxErrors / max_errors to tolerate more, or fix the input; the warnings above "
                      "say why each sequence was invalid).");
  }
}

std::vector<std::string> SequenceCleaner::first_removed_keys() const {
  std::lock_guard<std::mutex> lock(keys_mutex_);
  return first_keys_;
}

}  // namespace cntkio::pipeline
