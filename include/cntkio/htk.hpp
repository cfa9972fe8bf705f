/// @file
/// Speech data: HTK feature files listed in SCP files, and HTK MLF label files (CNTK's HTKFeatureDeserializer
/// and HTKMLFDeserializer, spec htk.md).
///
/// - An SCP file lists one utterance per line as `logical=physical[start,end]`: frames start..end (inclusive)
///   of the HTK feature file `physical`. The sequence key is `logical` without its last extension.
/// - An HTK feature file has a 12-byte header (frames, period, bytes per frame, parameter kind) and float32
///   frames, optionally compressed (`_C`: int16 values and per-dimension A/B vectors), in either byte order.
/// - An MLF file holds, per utterance, a quoted key line, label lines `start end state ...` (times in 100 ns
///   units) and a `.` line. Labels become sparse one-hot vectors of `label_dim` rows.
///
/// In frame mode every frame is its own sequence (key = utterance key, sample = frame index); otherwise every
/// utterance is one sequence. Features are the primary deserializer of a composite reader and labels are
/// joined to them by key.
///
/// Thread-safety: a deserializer may load different chunks from several threads at once; describe methods
/// are safe to call concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/deserializer.hpp"
#include "cntkio/keys.hpp"

namespace cntkio {

/// Receives warnings (level 1) and info lines (level 2), without newline; empty = stderr.
using HtkLogSink = std::function<void(int level, std::string_view line)>;

/// Options of one HTK feature stream (CNTK config keys in brackets).
struct HtkFeatureOptions {
  std::string name;      ///< stream name (the `input` record's name), required
  std::string scp_file;  ///< the SCP list [scpFile], required
  /// Further SCP lists, read after scp_file as one list (cntk.io's `StreamDef(scp=[a, b])`); each resolves
  /// `...` against its own folder. A config has one [scpFile].
  std::vector<std::string> more_scp_files;
  size_t dim = 0;  ///< per-frame dim, or the whole window's dim when inferred [dim]
  /// Frames before/after the centre [contextWindow]; 0/0 = infer the window from dim / file dim.
  size_t left_context = 0;
  size_t right_context = 0;        ///< see left_context
  std::string prefix_path_in_scp;  ///< root prepended to physical paths [prefixPathInSCP] ""
  bool expand_to_utterance =
      false;  ///< 1-frame utterances repeated to the primary's length [expandToUtterance]
  size_t max_sequence_size =
      std::numeric_limits<size_t>::max();  ///< longer utterances are skipped [maxSequenceSize]
  bool defines_mb_size = false;  ///< this stream's length counts for minibatch sizes [definesMBSize]
  bool frame_mode = true;        ///< every frame is a sequence [frameMode] true
  ElementType element_type = ElementType::kFloat;  ///< output precision [precision] float
  int trace_level = 1;                             ///< 0 errors, 1 warnings, 2 info [traceLevel]
  KeyTablePtr keys;     ///< key table shared with the other deserializers; null = string keys
  HtkLogSink log_sink;  ///< where warnings go; empty = stderr
};

/// Options of one MLF label stream (CNTK config keys in brackets).
struct MlfOptions {
  std::string name;                    ///< stream name (the `input` record's name), required
  std::vector<std::string> mlf_files;  ///< [mlfFile] or the list [mlfFileList], at least one
  std::string label_mapping_file;      ///< state list; empty = 4-column numeric labels [labelMappingFile]
  size_t label_dim = 0;                ///< number of classes, at most 65535 [labelDim] / [dim], required
  bool phone_boundaries = false;       ///< value 2 on the first frame of every label line [phoneBoundaries]
  bool frame_mode = true;              ///< labels are looked up per frame [frameMode] true
  ElementType element_type = ElementType::kFloat;  ///< [precision] float
  uint64_t chunk_size_in_bytes = 64ull << 20;      ///< MLF text per chunk [chunkSizeInBytes] 64 MiB
  /// Feature frames beyond the end of their labels (frame mode) are skipped as invalid sequences and counted
  /// against the reader's maxErrors; with 0 the first such utterance is a FormatError.
  size_t max_errors = 0;
  int trace_level = 1;  ///< 0 errors, 1 warnings, 2 info [traceLevel]
  KeyTablePtr keys;     ///< key table shared with the features; null = string keys
  HtkLogSink log_sink;  ///< where warnings go; empty = stderr
};

/// HTKFeatureDeserializer options from a composite deserializer section (CNTK's rules: only the
/// alphabetically first `input` stream is used; scpFile/dim/contextWindow/... from the stream record and its
/// parents; maxSequenceSize/definesMBSize from the `input` record and its parents). `frame_mode`: the
/// reader's packing (a composite reader decides it); unset, the section's `frameMode` (default true).
/// Throws ConfigError.
HtkFeatureOptions htk_feature_options_from_config(const Config& section,
                                                  std::optional<bool> frame_mode = std::nullopt);
/// HTKMLFDeserializer options from a composite deserializer section (`frame_mode` as above). Throws
/// ConfigError.
MlfOptions mlf_options_from_config(const Config& section, std::optional<bool> frame_mode = std::nullopt);

/// Reads the SCP file and the first feature file's header. Throws FormatError, IoError, ConfigError.
std::shared_ptr<Deserializer> make_htk_feature_deserializer(const HtkFeatureOptions& options);
/// Reads the state list and indexes the MLF files. Throws FormatError, IoError, ConfigError.
std::shared_ptr<Deserializer> make_mlf_deserializer(const MlfOptions& options);

/// What an HTK feature deserializer found (for `inspect` and tests).
struct HtkFeatureSummary {
  size_t utterances = 0;       ///< kept utterances
  size_t frames = 0;           ///< their frames
  size_t chunks = 0;           ///< chunks the utterances are grouped into
  size_t duplicates = 0;       ///< utterances dropped because their key occurs more than once
  size_t file_dim = 0;         ///< values per frame in the files
  size_t output_dim = 0;       ///< values per output sample (file dim x window)
  size_t left_context = 0;     ///< the window actually used: frames before the centre
  size_t right_context = 0;    ///< the window actually used: frames after the centre
  std::string kind;            ///< e.g. "MFCC_E_D_A"
  uint32_t sample_period = 0;  ///< 100 ns units
};
/// The summary of `deserializer`, which must come from make_htk_feature_deserializer.
HtkFeatureSummary htk_feature_summary(const Deserializer& deserializer);

/// What an MLF deserializer found.
struct MlfSummary {
  size_t utterances = 0;  ///< indexed utterances
  size_t frames = 0;      ///< their frames
  size_t chunks = 0;      ///< chunks of MLF text
  size_t states = 0;      ///< names in the state list (0 without one)
};
/// The summary of `deserializer`, which must come from make_mlf_deserializer.
MlfSummary mlf_summary(const Deserializer& deserializer);

// ---------------------------------------------------------------------------------------------------------
// Writing HTK feature files (cntkio convert, tests).

/// HTK base parameter kinds cntkio reads.
enum class HtkBaseKind : uint16_t {
  kMfcc = 6,      ///< MFCC: mel-frequency cepstral coefficients
  kFbank = 7,     ///< FBANK: log mel-filter bank channel outputs
  kUser = 9,      ///< USER: user-defined features
  kPlp = 11,      ///< PLP: perceptual linear prediction coefficients
  kFestream = 12  ///< FESTREAM: feature stream
};

/// How write_htk_file stores frames.
struct HtkWriteOptions {
  HtkBaseKind kind = HtkBaseKind::kUser;  ///< base kind written to the header
  uint16_t qualifiers = 0;          ///< extra parmKind bits (e.g. 0100 `_E`); `_C` is set by `compressed`
  uint32_t sample_period = 100000;  ///< 100 ns units (100000 = 10 ms)
  bool big_endian = false;          ///< standard HTK byte order (true) or little-endian (false)
  bool compressed = false;          ///< `_C`: int16 values with per-dimension A/B vectors
};

/// Writes `frames` (num_frames x dim floats, frame after frame) as one HTK file. Throws IoError, UsageError.
void write_htk_file(const std::string& path, const float* frames, size_t num_frames, size_t dim,
                    const HtkWriteOptions& options = {});

/// Options of convert_to_htk.
struct HtkConvertOptions {
  std::string scp_file;           ///< SCP to write, required; one line `<key>.<extension>=<file>[first,last]`
  std::string output_dir;         ///< where the feature files go (created); default: `<scp_file>.d`
  std::string extension = "fea";  ///< logical-name extension (the reader cuts it off again)
  bool archive = false;   ///< one file `features.htk` with a range per sequence, not a file per sequence
  HtkWriteOptions write;  ///< header settings (kind, period, byte order, compression)
};

/// What convert_to_htk wrote.
struct HtkConvertResult {
  size_t utterances = 0;  ///< feature files or archive ranges (SCP lines) written
  size_t frames = 0;      ///< frames written in all
};

/// Writes every sequence of the dense stream `stream` of `source` (chunks in id order, sequences in chunk
/// order) as an HTK utterance and one SCP line keyed by the source's sequence key, so that an
/// HTKFeatureDeserializer over the SCP reads the same values (float32; compressed output is quantised).
/// Physical paths in the SCP are written relative to the SCP (`.../`) where possible. Throws UsageError
/// (sparse stream, empty sequence, unusable key), IoError, and whatever the source throws.
HtkConvertResult convert_to_htk(Deserializer& source, size_t stream, const HtkConvertOptions& options);

}  // namespace cntkio
