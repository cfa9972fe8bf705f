/// @file
/// The CNTK Binary Format (CBF): its deserializer (current layout and the legacy "version 1" layout), its
/// header, and a streaming writer for both layouts.
///
/// Current layout: a 12-byte prefix (magic, version 1), the chunk bodies, a header at the end (streams and
/// the chunk table) and an int64 trailer holding the header's offset. Legacy v1 layout: the header first
/// (version, chunk count, per-stream headers, offsets table), then the chunks. docs/formats/cbf.md has the
/// byte tables and the error messages; spec: ../shared/spec/cbf.md.
///
/// Reading maps the file; a loaded chunk's sequences are views into the mapping (no per-value copy). Every
/// size and offset read from a file is checked against the file size before it is used, so a truncated or
/// corrupt file gives a FormatError naming the byte offset, never a crash or an allocation larger than the
/// file.
///
/// Thread-safety: a CBF deserializer may load different chunks from several threads at once; its describe
/// methods are const and safe to call concurrently. A CbfWriter is not thread-safe (one writer per thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/deserializer.hpp"

namespace cntkio {

/// Which of the two CBF layouts a file uses.
enum class CbfLayout : uint8_t {
  kCurrent,   ///< magic prefix, chunks, header at the end (what CNTK 2.x reads and ctf2bin.py writes)
  kLegacyV1,  ///< header first (CNTK before 2017-03-01); read for old files, written only on request
};

/// "CBF" or "legacy CBF v1".
const char* to_string(CbfLayout layout);

/// The magic number of the current layout (the bytes "nib_ktnc" on disk).
inline constexpr uint64_t kCbfMagic = 0x636e746b5f62696eull;
/// Randomization window of the stand-alone CNTKBinaryReader when none is configured: 4 GiB / 32 MiB chunks.
inline constexpr size_t kCbfDefaultWindowInChunks = 128;

/// Options of the CBF deserializer (CNTK config keys in brackets).
struct CbfOptions {
  std::string file;  ///< data file path, either layout [file]
  /// Further data files (or glob patterns) read after `file` as one corpus, as CtfOptions::more_files.
  std::vector<std::string> more_files;
  std::string file_list;  ///< a file listing further data files, one per line [fileList]
  /// Renames as {name in the file, exposed name}, applied in order (a later entry for the same file name
  /// wins); streams without an entry keep their file name [input.NAME.alias of the exposed NAME]. Default:
  /// none.
  std::vector<std::pair<std::string, std::string>> renames;
  /// Element type every stream must have in the file [precision] float. std::nullopt: each stream keeps the
  /// type it is stored with (the converters use this).
  std::optional<ElementType> element_type = ElementType::kFloat;
  bool keep_data_in_memory = false;  ///< load each chunk once and keep it [keepDataInMemory] false
  int trace_level = 1;               ///< 0 errors, 1 warnings, 2 info, 3 the init line [traceLevel] 1
  /// Receives warnings and info lines (without newline); default: stderr.
  std::function<void(int level, std::string_view line)> log_sink;
};

/// Reads the CBF options from a reader or deserializer section (CNTK's BinaryConfigHelper rules): `file`,
/// `input` (renames only; `dim`/`format` inside are ignored), `precision` (scoped), `keepDataInMemory`,
/// `traceLevel`. Throws ConfigError.
CbfOptions cbf_options_from_config(const Config& section);

/// Opens a CBF file of either layout and checks its header. Throws FormatError, IoError, ConfigError.
std::shared_ptr<Deserializer> make_cbf_deserializer(const CbfOptions& options);

/// One stream as a CBF header describes it.
struct CbfStreamHeader {
  std::string name;                                ///< as stored in the file
  StorageFormat storage = StorageFormat::kDense;   ///< dense or sparse CSC
  ElementType element_type = ElementType::kFloat;  ///< stored value type
  uint64_t dim = 0;                                ///< sample dimension
  uint64_t type_offset = 0;                        ///< byte offset of the stored element type (for messages)
};

/// One row of the chunk table.
struct CbfChunkHeader {
  uint64_t offset = 0;      ///< absolute byte offset of the chunk body
  uint64_t size = 0;        ///< bytes up to the next chunk (the last: up to the header, legacy: up to EOF)
  uint32_t sequences = 0;   ///< number of sequences
  uint32_t samples = 0;     ///< sum of the sequences' scheduling lengths, as stored
  uint64_t row_offset = 0;  ///< byte offset of this row in the chunk table (for messages)
};

/// The validated header of a CBF file.
struct CbfHeader {
  CbfLayout layout = CbfLayout::kCurrent;  ///< which layout the file uses
  uint64_t file_size = 0;                  ///< bytes of the file
  uint64_t header_offset = 0;  ///< current: where the header starts (the trailer's value); legacy: 0
  uint64_t data_offset = 0;    ///< first byte of chunk data (current: 12; legacy: end of the offsets table)
  std::vector<CbfStreamHeader> streams;  ///< the streams, in file order
  std::vector<CbfChunkHeader> chunks;    ///< the chunk table, in file order

  uint64_t total_sequences() const;  ///< sum of the table's per-chunk sequence counts
  uint64_t total_samples() const;    ///< sum of the table's per-chunk sample counts
};

/// The layout of `path` from its first 8 bytes, or std::nullopt if it is neither. Throws IoError.
std::optional<CbfLayout> detect_cbf_layout(const std::string& path);

/// Reads and validates the header of `path` (either layout). Throws FormatError, IoError.
CbfHeader read_cbf_header(const std::string& path);

/// The header of `deserializer`, which must come from make_cbf_deserializer.
const CbfHeader& cbf_header(const Deserializer& deserializer);

/// One stream of a CBF file being written.
struct CbfWriterStream {
  std::string name;                                ///< stored name (ASCII recommended)
  StorageFormat storage = StorageFormat::kDense;   ///< dense or sparse CSC
  ElementType element_type = ElementType::kFloat;  ///< stored value type
  uint64_t dim = 0;                                ///< sample dimension, > 0 (sparse: at most 2^31 - 1)
};

/// Options of a CbfWriter.
struct CbfWriterOptions {
  CbfLayout layout = CbfLayout::kCurrent;      ///< layout to write, default the current one
  uint64_t chunk_size_in_bytes = 32ull << 20;  ///< largest chunk body; a bigger sequence gets its own chunk
};

/// Writes a CBF file sequence by sequence. Chunks are cut so that no chunk body exceeds
/// chunk_size_in_bytes, unless a single sequence alone does. The file is written under `<path>.partial`
/// and renamed to `path` by finish(); a writer destroyed before finish() removes the partial file.
class CbfWriter {
 public:
  /// Creates the partial file. Throws UsageError for invalid streams, IoError.
  CbfWriter(std::string path, std::vector<CbfWriterStream> streams, CbfWriterOptions options = {});
  ~CbfWriter();
  CbfWriter(const CbfWriter&) = delete;
  CbfWriter& operator=(const CbfWriter&) = delete;

  /// Appends one sequence. `data[i]` holds stream i's samples with values of type `types[i]` (converted to
  /// the stream's element type when they differ); `length` is its scheduling length, 0 = the most samples of
  /// any stream, and never more than that (a reader refuses a length that no stream's samples reach).
  /// Sparse indices must lie in [0, dim). Throws UsageError for data the layout cannot hold (legacy: a dense
  /// stream without exactly one sample, trailing empty sparse samples), IoError.
  void add_sequence(const std::vector<SequenceData>& data, const std::vector<ElementType>& types,
                    uint32_t length = 0);

  /// Writes the last chunk, the header and the trailer, and renames the file into place. Throws IoError.
  void finish();

  uint64_t sequences() const;      ///< sequences added so far
  uint64_t samples() const;        ///< sum of their scheduling lengths
  uint64_t chunks() const;         ///< chunks written so far (complete after finish())
  uint64_t bytes_written() const;  ///< file size after finish()
  /// Finite double values beyond float's range written into a float stream (as infinity).
  uint64_t overflowed_values() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cntkio
