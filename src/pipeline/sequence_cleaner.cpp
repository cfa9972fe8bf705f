#include "pipeline/sequence_cleaner.hpp"

#include <string>

#include "cntkio/errors.hpp"

namespace cntkio::pipeline {

void SequenceCleaner::clean(Sequences& sequences, const Deserializer& names) {
  const size_t n = sequences.num_sequences();
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    bool valid = true;
    for (const auto& stream : sequences.data) valid = valid && stream[i].valid;
    if (!valid) {
      last_key_ = names.key_to_string(sequences.keys[i]);
      std::lock_guard<std::mutex> lock(keys_mutex_);
      if (first_keys_.size() < kKeysKept) first_keys_.push_back(last_key_);
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
    removed_ += n - kept;
  }
  // Like CNTK, the check runs on every batch that has data, so once the maximum is exceeded (possibly by a
  // batch that lost all its sequences) the next batch with data throws.
  if (kept > 0 && removed_ > max_invalid_) {
    SourceLocation where;
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
