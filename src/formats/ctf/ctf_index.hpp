// Pass 1 of the CTF reader: the index (sequences with their byte ranges and line counts, then chunks),
// and CNTK's binary index cache. Behaviour: spec ctf.md §4 and §5.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/keys.hpp"

namespace cntkio::ctf {

struct IndexedSequence {
  uint64_t key = 0;      ///< numeric id (id mode) or 0-based line number (line mode)
  uint64_t offset = 0;   ///< byte offset of its first row
  uint32_t samples = 0;  ///< indexed rows (scheduling length)
  uint32_t size = 0;     ///< bytes, up to and including the last LF (or EOF)
};

struct IndexedChunk {
  uint64_t first_sequence = 0;  ///< index into CtfIndex::sequences
  uint64_t num_sequences = 0;
  uint64_t samples = 0;
};

struct CtfIndex {
  std::vector<IndexedSequence> sequences;
  std::vector<IndexedChunk> chunks;
  bool line_mode = false;
};

/// Builds the sequence list of `data` (the whole file). `main_alias` empty = no definesMBSize stream.
/// `keys` null or numeric: numeric ids; otherwise symbolic ids (text up to the first blank) mapped by `keys`.
/// Throws FormatError for the fatal conditions of spec §4 (empty file, UTF-16, missing or overflowing id).
CtfIndex build_index(std::string_view data, const std::string& file, bool skip_sequence_ids,
                     std::string_view main_alias, KeyTable* keys = nullptr);

/// Groups the sequences into chunks (spec §4.6) with the given maximum chunk byte span.
void form_chunks(CtfIndex& index, uint64_t chunk_size_in_bytes, uint64_t file_size);

/// Loads the sequence list from a cache file; false if the file is missing, unreadable or malformed.
bool load_index_cache(const std::string& cache_path, uint64_t file_size, CtfIndex& index);

/// Writes the sequence list to `cache_path` atomically (temporary file + rename). Returns false on failure.
bool write_index_cache(const std::string& cache_path, const CtfIndex& index);

}  // namespace cntkio::ctf
