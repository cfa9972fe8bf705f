/// @file
/// Converters between the CNTK Text Format (CTF), CBF and legacy CBF v1 (the CTF writer is in ctf.hpp).
///
/// A conversion reads the input with cntkio's own deserializer (so CTF is parsed with CNTK's exact rules)
/// and writes every sequence, in file order, to the output. Conversions are lossless: values are stored or
/// printed so that reading the output gives bit-identical values (CTF text is written in a spelling that
/// CNTK's number parser maps back to the same float/double; see docs/formats/cbf.md), with the same
/// sequences, sample counts, sparse entries and scheduling lengths, where the output format can hold them
/// (otherwise the conversion fails with a UsageError saying what cannot be represented).
///
/// Thread-safety: the functions are reentrant.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/cbf.hpp"
#include "cntkio/ctf.hpp"
#include "cntkio/deserializer.hpp"
#include "cntkio/minibatch_source.hpp"

namespace cntkio {

/// File formats a conversion reads or writes.
enum class DataFormat : uint8_t {
  kCtf,        ///< CNTK Text Format
  kCbf,        ///< CBF, current layout
  kCbfLegacy,  ///< CBF, legacy "version 1" layout
};

/// "ctf", "cbf" or "cbf1" (the spellings of `cntkio convert --from/--to`).
const char* to_string(DataFormat format);
/// Parses "ctf", "cbf" or "cbf1"; std::nullopt otherwise.
std::optional<DataFormat> parse_data_format(std::string_view text);
/// The format of an existing input file from its content: CBF magic, legacy version 1, else CTF.
DataFormat detect_data_format(const std::string& path);
/// The format an output path implies by its extension (.bin/.cbf: CBF, anything else: CTF).
DataFormat data_format_for_output(const std::string& path);

/// A stream of a conversion: `alias` is its name in the input, `name` its name in the output.
struct ConvertStream {
  std::string name;                      ///< CBF header name or CTF `|name` in the output (required)
  std::string alias;                     ///< name in the input; default: `name`
  uint64_t dim = 0;                      ///< sample dimension; required for CTF input, else checked
  std::optional<StorageFormat> storage;  ///< required for CTF input, else checked
};

/// Parses `name[:alias[:dim:dense|sparse]]` (empty fields allowed, e.g. `f::784:dense`). Throws UsageError.
ConvertStream parse_convert_stream(std::string_view spec);

/// Options of convert_file / convert_deserializer.
struct ConvertOptions {
  DataFormat to = DataFormat::kCbf;  ///< output format
  /// Streams to convert, in output order. CTF input: required. CBF input: empty = every stream in file order.
  std::vector<ConvertStream> streams;
  /// Output value type. std::nullopt: the input's (CTF input: float).
  std::optional<ElementType> element_type;
  uint64_t chunk_size_in_bytes = 32ull << 20;  ///< CBF output: largest chunk body (default 32 MiB)
  /// Called after each input chunk with (sequences done, sequences in total).
  std::function<void(uint64_t done, uint64_t total)> progress;
  /// Receives the input reader's warnings (CTF) and the converter's notes; default: stderr.
  std::function<void(std::string_view line)> log;
};

/// What a conversion did.
struct ConvertSummary {
  uint64_t sequences = 0;          ///< sequences written
  uint64_t samples = 0;            ///< sum of the scheduling lengths
  uint64_t chunks = 0;             ///< chunks written (CBF output)
  uint64_t bytes = 0;              ///< size of the output file
  uint64_t inexact_values = 0;     ///< CTF output: see CtfWriter::inexact_values
  uint64_t overflowed_values = 0;  ///< CBF output: see CbfWriter::overflowed_values
  /// CTF input read with maxErrors: the rows and samples skipped (not written) and where.
  SkipReport skipped;
};

/// Converts `input` (of format `from`) to `output`. Throws FormatError (bad input), UsageError (streams
/// missing or not representable in the output), ConfigError, IoError. The output is written under
/// `<output>.partial` and renamed when complete.
ConvertSummary convert_file(const std::string& input, DataFormat from, const std::string& output,
                            const ConvertOptions& options);

/// Converts everything `source` delivers (its streams in order, named by their StreamInfo::name; `alias`
/// and `streams` of `options` are ignored) to `output`.
ConvertSummary convert_deserializer(Deserializer& source, const std::string& output,
                                    const ConvertOptions& options);

}  // namespace cntkio
