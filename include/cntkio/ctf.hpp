/// @file
/// The CNTK Text Format (CTF) deserializer.
///
/// A CTF file holds rows `[sequenceId] |alias values |alias values ...`; consecutive rows with the same id
/// form one sequence. The deserializer indexes the file once (sequence ids, byte ranges, chunks), and parses
/// a chunk only when asked for it. See docs/formats/ctf.md for the format and its error messages.
///
/// Thread-safety: a CtfDeserializer may load different chunks from several threads at once. One load may
/// itself use several threads (CtfOptions::parse_threads, or idle workers of the pool it runs on).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/deserializer.hpp"
#include "cntkio/keys.hpp"
#include "cntkio/stream.hpp"

namespace cntkio {

/// One input stream of a CTF file.
struct CtfStreamOptions {
  std::string name;                               ///< stream name seen by users (required)
  std::string alias;                              ///< name after `|` in the file; default: `name`
  size_t dim = 0;                                 ///< sample dimension (required, > 0)
  StorageFormat storage = StorageFormat::kDense;  ///< dense or sparse
  bool defines_mb_size = false;                   ///< at most one stream may set it
};

/// Options of the CTF deserializer (CNTK config keys in brackets).
struct CtfOptions {
  std::string file;  ///< data file path [file]
  /// Further data files of the corpus, read after `file` as one deserializer ([file] as an array
  /// `(a.ctf:b.ctf)`); `file` and each of them may be a glob pattern (`shards/*.ctf`). Chunks never span
  /// files; each file has its own index cache. make_ctf_deserializer reads one file (`file`, not a pattern)
  /// and refuses these: a reader built from a spec (MinibatchSource::create) joins the files.
  std::vector<std::string> more_files;
  std::string file_list;                  ///< a file listing further data files, one per line [fileList]
  std::vector<CtfStreamOptions> streams;  ///< in stream-id order [input]
  ElementType element_type = ElementType::kFloat;  ///< [precision] float
  bool skip_sequence_ids = false;                  ///< every line is its own sequence [skipSequenceIds]
  uint64_t max_errors = 0;                         ///< tolerated malformed rows/samples [maxErrors]
  int trace_level = 1;                             ///< 0 errors, 1 warnings, 2 info [traceLevel]
  uint64_t chunk_size_in_bytes = 32ull << 20;      ///< chunking of the index [chunkSizeInBytes]
  bool keep_data_in_memory = false;                ///< parse each chunk once and keep it [keepDataInMemory]
  bool cache_index = false;  ///< write/read the index cache (ctf_cache_file_name) [cacheIndex]
  /// Threads that parse one chunk at once when it is loaded outside a MinibatchSource (whose chunk loaders
  /// lend their idle threads instead): the chunk is split at sequence boundaries into runs that they parse
  /// side by side. 0 or 1: the loading thread alone. The data delivered does not depend on it.
  size_t parse_threads = 0;
  /// The smallest run of a chunk, in bytes of the file, that is worth a thread of its own.
  uint64_t parse_split_bytes = 512ull << 10;
  /// Threads that index the file when it is opened: it is split at line boundaries into runs of at least
  /// index_split_bytes that they scan side by side. 0: the hardware threads, at most 8. The index does not
  /// depend on it. Files with non-numeric sequence keys are indexed by one thread.
  size_t index_threads = 0;
  /// The smallest run of the file, in bytes, that is worth an indexing thread of its own.
  uint64_t index_split_bytes = 32ull << 20;
  /// Each sequence is first read by a fast path that takes only rows the general parser would read without
  /// a message (known streams, well-formed numbers, a final newline) and hands anything else to the general
  /// parser. The data, messages and errors do not depend on it; false reads with the general parser only.
  bool row_fast_path = true;
  /// Sequence keys shared with the other deserializers of a reader; null = numeric ids.
  KeyTablePtr keys;
  /// Receives warnings and info lines (without newline); default: stderr.
  std::function<void(int level, std::string_view line)> log_sink;
};

/// Reads the CTF options from a deserializer/reader config section (CNTK's TextConfigHelper rules).
/// `composite` selects the composite factory's precision rule (only lowercase `float` gives float).
CtfOptions ctf_options_from_config(const Config& section, bool composite = false);

/// Creates a CTF deserializer; indexes the file (or loads its index cache). Throws FormatError, IoError,
/// ConfigError.
std::shared_ptr<Deserializer> make_ctf_deserializer(const CtfOptions& options);

/// Index statistics of a CTF deserializer (for `inspect` and tests).
struct CtfIndexSummary {
  uint64_t sequences = 0;          ///< sequences indexed
  uint64_t samples = 0;            ///< their scheduling samples (sum of sequence lengths)
  uint64_t chunks = 0;             ///< chunks of the index
  uint64_t file_size = 0;          ///< bytes of the data file
  bool line_mode = false;          ///< one sequence per line
  bool loaded_from_cache = false;  ///< index came from the cache file
  /// The index was taken from another CTF deserializer of this process (or of the process this one was
  /// forked from) that had indexed the same, unchanged file with the same id options and chunk size.
  bool shared_in_process = false;
  /// The cache's chunk table was used: a chunk's sequence records are read from the cache each time it is
  /// used (a cache cntkio wrote with the same chunkSizeInBytes), so they take no memory.
  bool lazy_sequence_records = false;
  /// A cache file was there but described another version of the data file (its size, modification time or
  /// first and last bytes differ, or, for a cache CNTK wrote, it is not newer than the data file): not used.
  bool cache_was_stale = false;
  std::string cache_file;  ///< cache path (when cacheIndex is on)
  /// This open wrote the cache file. False when it was used, when another process of the machine writes it
  /// (local rank other than 0), for string sequence keys, or when writing failed (cache_not_written_reason).
  bool cache_written = false;
  std::string cache_not_written_reason;  ///< why a cache that was not used was not written either
};
/// Summary of `deserializer`, which must come from make_ctf_deserializer.
CtfIndexSummary ctf_index_summary(const Deserializer& deserializer);

/// Skip statistics: what maxErrors let through so far (no silent data loss). Every counted error dropped a
/// row, dropped a sample, or (the rest) flagged a sequence whose sample count differs from its row count.
/// A chunk loaded again (another sweep, no keepDataInMemory) is counted again, as CNTK does.
struct CtfErrorSummary {
  uint64_t errors = 0;                       ///< errors counted against maxErrors
  uint64_t rows_skipped = 0;                 ///< rows that gave no sample at all (blank, garbage, all bad)
  uint64_t samples_skipped = 0;              ///< `|name values` groups dropped (bad name, values or dim)
  std::vector<std::string> first_locations;  ///< first few (10) "file:line:column" of counted errors
};
/// The skip statistics of `deserializer` so far, which must come from make_ctf_deserializer.
CtfErrorSummary ctf_error_summary(const Deserializer& deserializer);

/// The CNTK index cache file name for `options`: the data file's path followed by
/// `.ALIAS.S.Y.H.v1.cache`, where ALIAS is the main stream's alias (or an underscore), S is 1 when
/// skip_sequence_ids is set, Y is 1 for string or hashed keys and H is 1 for hashed keys (each 0 otherwise).
/// For a remote file (a URL) the same suffix follows a name in the local cache folder that hashes the URL,
/// its ETag and size (docs/remote-data.md): remote paths are read-only.
std::string ctf_cache_file_name(const CtfOptions& options);

// ---- writing CTF (cntkio convert, and anyone who writes CTF files); a CtfWriter is not thread-safe ----

/// One stream of a CTF file being written.
struct CtfWriterStream {
  std::string alias;                              ///< the `|alias` written before its samples
  StorageFormat storage = StorageFormat::kDense;  ///< dense or sparse
  uint64_t dim = 0;                               ///< sample dimension (dense: values per sample)
};

/// Writes a CTF file sequence by sequence: one row per time step, `id |alias values ...` for every stream
/// that still has a sample at that step. Values use the shortest spelling that CNTK's CTF number parser
/// reads back to the identical value (infinities as `1e999`, NaN as `0e999`). Written under
/// `<path>.partial`, renamed by finish().
class CtfWriter {
 public:
  /// Creates `<path>.partial` for the given streams (written in this order in every row). Throws UsageError
  /// for invalid streams, IoError.
  CtfWriter(std::string path, std::vector<CtfWriterStream> streams);
  /// Removes the partial file unless finish() was called.
  ~CtfWriter();
  CtfWriter(const CtfWriter&) = delete;
  CtfWriter& operator=(const CtfWriter&) = delete;

  /// Appends a sequence with id `id` (digits). Every stream needs at least one sample (CTF cannot hold an
  /// empty stream in a sequence). Throws UsageError, IoError.
  void add_sequence(std::string_view id, const std::vector<SequenceData>& data,
                    const std::vector<ElementType>& types);
  /// Flushes and renames the file into place. Throws IoError.
  void finish();
  /// Bytes written so far (the file size after finish()).
  uint64_t bytes_written() const;
  /// Values no spelling was found for that CNTK's parser reads back exactly (only extreme doubles, such as
  /// some subnormals; written with 17 digits, which it reads to within an ulp or two).
  uint64_t inexact_values() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The text CtfWriter writes for `value` (float: the float value, double: the double value).
std::string ctf_number_text(double value, ElementType type);
/// CNTK's CTF number parser (spec ctf.md §6.6) applied to a complete number `text`; std::nullopt if it fails.
std::optional<double> ctf_parse_number(std::string_view text);

}  // namespace cntkio
