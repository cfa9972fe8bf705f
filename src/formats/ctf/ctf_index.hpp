// Pass 1 of the CTF reader: the index (sequences with their byte ranges and line counts, then chunks),
// and CNTK's binary index cache. Behaviour: spec ctf.md §4 and §5.
#pragma once

#include <cstdint>
#include <span>
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
  uint64_t records_hash = 0;  ///< chunk_records_hash() of its sequences (set by a cache's chunk table)
};

struct CtfIndex {
  std::vector<IndexedSequence> sequences;
  std::vector<IndexedChunk> chunks;
  bool line_mode = false;
};

/// Builds the sequence list of `data` (the whole file). `main_alias` empty = no definesMBSize stream.
/// `keys` null or numeric: numeric ids; otherwise symbolic ids (text up to the first blank) mapped by `keys`.
/// Throws FormatError for the fatal conditions of spec §4 (empty file, UTF-16, missing or overflowing id).
/// With numeric ids or one sequence per line, up to `threads` threads scan runs of at least
/// `min_split_bytes` each; the index is the same for every number of threads.
CtfIndex build_index(std::string_view data, const std::string& file, bool skip_sequence_ids,
                     std::string_view main_alias, KeyTable* keys = nullptr, size_t threads = 1,
                     uint64_t min_split_bytes = 32ull << 20);

/// Groups the sequences into chunks (spec §4.6) with the given maximum chunk byte span.
void form_chunks(CtfIndex& index, uint64_t chunk_size_in_bytes, uint64_t file_size);

/// Loads the whole sequence list from the bytes of a cache file (CNTK's layout); false if they are malformed.
bool load_index_cache(std::string_view cache, uint64_t file_size, CtfIndex& index);

/// Reads only the chunk table that cntkio appends to its caches (after the records CNTK reads), if the cache
/// has one made for this data file size and `chunk_size_in_bytes`: fills index.chunks (with their
/// records_hash) and leaves index.sequences empty. False if there is none or it is malformed.
bool load_cache_chunk_table(std::string_view cache, uint64_t file_size, uint64_t chunk_size_in_bytes,
                            CtfIndex& index);

/// The sequence records of `chunk` (from the chunk table of the same `cache`), checked against the data file
/// size, the chunk's sample count and its records_hash. Empty if they do not match.
std::vector<IndexedSequence> read_cached_chunk(std::string_view cache, uint64_t file_size,
                                               const IndexedChunk& chunk);

/// A hash of the fields of `sequences` (not of their bytes on disk, whose padding is undefined).
uint64_t chunk_records_hash(std::span<const IndexedSequence> sequences);

/// Writes the sequence list, and the chunk table formed with `chunk_size_in_bytes` for a data file of
/// `file_size` bytes, to `cache_path` atomically (temporary file + rename). Returns false on failure.
bool write_index_cache(const std::string& cache_path, const CtfIndex& index, uint64_t chunk_size_in_bytes,
                       uint64_t file_size);

}  // namespace cntkio::ctf
