// Pass 1 of the CTF reader: the index (sequences with their byte ranges and line counts, then chunks;
// ctf_index.cpp), and CNTK's binary index cache (ctf_index_cache.cpp). Behaviour: spec ctf.md §4 and §5.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/keys.hpp"
#include "core/input_file.hpp"
#include "formats/ctf/sequence_list.hpp"

namespace cntkio::ctf {

struct IndexedChunk {
  uint64_t first_sequence = 0;  ///< index into CtfIndex::sequences
  uint64_t num_sequences = 0;
  uint64_t samples = 0;
  uint64_t records_hash = 0;  ///< chunk_records_hash() of its sequences (set by a cache's chunk table)
};

struct CtfIndex {
  SequenceList sequences;
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

/// What a cache written by cntkio records of the data file it indexes. A cache is used only for a data file
/// of the same size, modification time (nanoseconds) and fingerprint (a hash of its first and last 64 KiB).
struct DataFileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t fingerprint = 0;
  bool operator==(const DataFileStamp&) const = default;
};
/// The stamp of the data file whose bytes are `data` and whose identity is `identity`: its size, mtime and a
/// fingerprint of its first and last 64 KiB, or of its ETag where the backend gives one (a remote file).
DataFileStamp stamp_data_file(std::string_view data, const core::FileIdentity& identity);

/// The footer cntkio writes at the end of its caches, after the chunk table.
struct CacheFooter {
  uint64_t chunk_size_in_bytes = 0;  ///< the chunk table's
  DataFileStamp data;                ///< the data file the cache describes
  uint64_t chunks = 0;
  uint64_t records_end = 0;          ///< where the chunk table starts
  bool keys_ascending = false;       ///< keys never decrease in record order
  uint64_t adjacent_equal_keys = 0;  ///< records whose key equals the one before
};
/// The footer of `cache`, if it ends with a well-formed one of the current version (a cache CNTK or an older
/// cntkio wrote has none).
std::optional<CacheFooter> read_cache_footer(std::string_view cache);

/// Loads the whole sequence list from the bytes of a cache file (CNTK's layout); false if they are malformed.
bool load_index_cache(std::string_view cache, uint64_t file_size, CtfIndex& index);

/// Reads only the chunk table of a cache whose `footer` was read, if it was made for this data file size and
/// `chunk_size_in_bytes`: fills index.chunks (with their records_hash) and leaves index.sequences empty.
/// False if it was not, or it is malformed.
bool load_cache_chunk_table(std::string_view cache, const CacheFooter& footer, uint64_t file_size,
                            uint64_t chunk_size_in_bytes, CtfIndex& index);

/// The sequence records of `chunk` (from the chunk table of the same `cache`), checked against the data file
/// size, the chunk's sample count and its records_hash. Empty if they do not match.
std::vector<IndexedSequence> read_cached_chunk(std::string_view cache, uint64_t file_size,
                                               const IndexedChunk& chunk);
/// Record `index` of `cache`; false if it lies outside the cache or outside the data file.
bool read_cached_record(std::string_view cache, uint64_t file_size, uint64_t index, IndexedSequence& out);

/// A hash of the fields of `sequences` (not of their bytes on disk, whose padding is undefined).
uint64_t chunk_records_hash(std::span<const IndexedSequence> sequences);

/// Writes the sequence list, the chunk table formed with `chunk_size_in_bytes` and the stamp of the data file
/// to `cache_path` atomically (Env::new_writable_file: the temporary `<cache_path>.tmp.<host>.<pid>`, fsync,
/// rename, fsync of the folder). Returns false on failure, with the IoError's text in `failure` if given;
/// the temporary is then removed and `cache_path` keeps what it held.
bool write_index_cache(const std::string& cache_path, const CtfIndex& index, uint64_t chunk_size_in_bytes,
                       const DataFileStamp& data, std::string* failure = nullptr);

/// Removes the temporaries `<cache_path>.tmp.<host>.<pid>` of writers that died: those of this machine whose
/// process is gone, and any older than an hour. Returns how many were removed.
size_t remove_stale_cache_temporaries(const std::string& cache_path);

}  // namespace cntkio::ctf
