/// @file
/// ReaderSpec: a reader described as typed values: the source's options and its deserializers, each a
/// registered `type` with that type's options, streams and transforms. MinibatchSource::create builds the
/// whole pipeline from a spec alone. CNTK's config language compiles to one (ReaderSpec::from_config, every
/// legacy reader type included); C++ and Python build them directly.
///
/// Every field says its CNTK config key in brackets and its default. An empty std::optional means "what the
/// formats of the reader imply" (the rule is given), as CNTK derives it.
///
/// Thread-safety: plain values.
#pragma once

#include <any>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/keys.hpp"
#include "cntkio/stream.hpp"

namespace cntkio {

/// One transform of a stream: a registered transform type and its options.
struct TransformSpec {
  std::string type;    ///< [type] registered transform type ("Crop", "Scale", ..., or a plugin's)
  std::string module;  ///< [module] shared library that registers `type`; empty: built in or already loaded
  std::any options;    ///< the type's options (ImageCropOptions for "Crop", ...); empty: the type's defaults
};

/// The transforms of one stream of a deserializer, applied in order between the randomizer and the packer.
struct StreamTransforms {
  std::string stream;                     ///< the stream's name (as the deserializer names it)
  std::vector<TransformSpec> transforms;  ///< [input.STREAM.transforms] in order
};

/// One deserializer of a reader.
struct DeserializerSpec {
  std::string type;    ///< [type] registered type ("CNTKTextFormatDeserializer", ..., or a plugin's)
  std::string module;  ///< [module] shared library that registers `type`; empty or one of CNTK's: built in
  /// The type's options: CtfOptions, CbfOptions, HtkFeatureOptions, MlfOptions, ImageOptions, or a plugin's
  /// own. They name the streams; the reader-wide settings of SourceOptions (precision, keys, frame mode,
  /// trace level) override the same fields here.
  std::any options;
  std::vector<StreamTransforms> transforms;  ///< per stream; none by default
};

/// How the samples of a minibatch are packed.
enum class Packing : uint8_t {
  kSequences,          ///< whole sequences side by side (CNTK's sequence mode)
  kFrames,             ///< every sample its own sequence [frameMode = true]
  kTruncatedSequences  ///< sequences cut into pieces of truncation_length [truncated = true]
};

/// What a reader does with its deserializers' data.
struct SourceOptions {
  // -- order
  bool randomize = true;  ///< [randomize] true; false (or `none`) reads in file order
  /// [randomizationWindow] empty: a format's default: CTF, chunks of 4 GiB of text in all; an image
  /// deserializer alone, one sample; otherwise the whole data.
  std::optional<size_t> randomization_window;
  /// [sampleBasedRandomizationWindow] empty: samples, except where the window is a format's chunk default.
  std::optional<bool> sample_based_window;
  uint64_t seed = 0;  ///< [randomizationSeed] 0 (sweep k shuffles with seed + k)

  // -- packing
  /// [frameMode], [truncated] empty: frames for an image deserializer alone when randomized, else sequences.
  std::optional<Packing> packing;
  /// [truncationLength] samples per piece with kTruncatedSequences; 0: the minibatch size of each epoch.
  size_t truncation_length = 0;
  size_t right_splice = 0;  ///< [rightSplice] 0: samples of a full piece emitted again (LC-BLSTM)
  /// [nbruttsineachrecurrentiter] CNTK's older truncated packing (flat HTK readers): with truncation_length
  /// 0, the parallel sequences of each epoch (the last value repeats), each the minibatch size long.
  std::vector<size_t> truncation_slots_per_epoch;
  bool local_timeline =
      true;  ///< [localTimeline] true: budgets per worker; false: CNTK's stand-alone readers

  // -- data
  ElementType element_type = ElementType::kFloat;  ///< [precision] float
  /// [useNumericSequenceKeys], [hashSequenceKeys] empty: numeric, unless a format prefers strings (HTK).
  std::optional<KeyMode> keys;
  size_t max_errors = 0;  ///< [maxErrors] 0: invalid sequences dropped before the reader fails

  // -- how much (cntk.io): also settable later with MinibatchSource::set_v2_limits
  std::optional<size_t> max_samples;  ///< [maxSamples] kInfinitelyRepeat, kFullDataSweep or a count
  std::optional<size_t> max_sweeps;   ///< [maxSweeps] a count

  // -- execution
  std::optional<int> trace_level;  ///< [traceLevel] empty: each deserializer's own (1: warnings)
  std::optional<size_t> threads;   ///< [loaderThreads] empty: the hardware threads; 0: load in the caller
  bool prefetch = true;            ///< [prefetch] true: read the next minibatches while the caller works
  /// [multiThreadedDeserialization] empty: on when an image deserializer is present; transforms the sequences
  /// of a minibatch on the loader threads (results do not depend on it).
  std::optional<bool> parallel_transforms;
  /// [chunkCacheBytes] 0 (off); beyond CNTK: keeps the chunks the deserializers decode, up to this many bytes
  /// of their data, so that later sweeps take them instead of parsing the files again (the same minibatches).
  /// The first chunks that fit are kept and no other is admitted once it is full. The whole cache is dropped
  /// when a data file's identity changes (checked as each sweep begins to reuse it). A size as text is read
  /// by parse_byte_size ("4GiB").
  size_t chunk_cache_bytes = 0;
};

/// A byte count written as digits with an optional unit (case-insensitive): B, KiB/MiB/GiB/TiB (and K, M, G,
/// T: powers of 1024) or KB/MB/GB/TB (powers of 1000): "4GiB", "512M", "1000000". Empty when `text` is not
/// one or the count does not fit in 64 bits.
std::optional<uint64_t> parse_byte_size(std::string_view text);

/// A reader.
struct ReaderSpec {
  SourceOptions source;                         ///< what the reader does with its deserializers' data
  std::vector<DeserializerSpec> deserializers;  ///< the first is primary; others are joined by key

  /// Compiles a CNTK reader section: composite (`deserializers = (...)`) or stand-alone (`readerType = ...`,
  /// including CNTKTextFormatReader, CNTKBinaryReader, HTKDeserializers, HTKMLFReader and ImageReader).
  /// Relative paths resolve against the current directory. Throws ConfigError (located), IoError where a
  /// module must be loaded to read its section.
  static ReaderSpec from_config(const Config& reader_section);
};

}  // namespace cntkio
