// `cntkio dump`: reads a reader section and writes its minibatches as CNTK's reader tests do
// (shared/conformance/README.md §2). Used by the CLI and by the conformance runner.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "cntkio/minibatch_source.hpp"

namespace cntkio::pipeline {

struct DumpOptions {
  std::string config_file;                ///< CNTK config file
  std::string section;                    ///< top-level block holding the reader
  std::string reader_section = "reader";  ///< block inside `section`
  std::vector<std::string> overrides;     ///< command-line style `key=value` overrides, applied in order
  size_t epoch_size = kFullSweep;         ///< samples per epoch (kFullSweep: one sweep)
  size_t minibatch_size = 0;              ///< samples per minibatch
  size_t epochs = 1;
  std::vector<std::string> features;  ///< streams written first, in order (empty: every stream)
  std::vector<std::string> labels;    ///< streams written after the features
  size_t subset = 0;                  ///< worker rank
  size_t subsets = 1;                 ///< number of workers
  bool shared_layout = true;          ///< requested streams must have identical layouts
  /// Value dumps: minibatches written per epoch (CNTK's test harness writes at most 10). Not used with
  /// `keys`, which reads each epoch to its end (the conformance README's keys mode).
  size_t max_minibatches = 10;
  bool keys = false;  ///< write the sequence keys of every minibatch instead of values
  /// Write sparse streams as `index:value` entries (any dim) rather than as dense rows (at most
  /// kMaxDensifiedDim; a larger sparse stream is refused).
  bool sparse_entries = false;
  /// Receives what the reader skipped under maxErrors, also when an error ends the run; null: not wanted.
  SkipReport* skip_report = nullptr;
};

/// The largest dimension of a sparse stream that dump writes as dense rows: one sample of dimension D
/// becomes a line of D numbers (CNTK's reader tests use at most 10000).
inline constexpr size_t kMaxDensifiedDim = size_t{1} << 20;

/// Builds the reader and writes the minibatches to `out`. Throws cntkio errors; a UsageError, before
/// anything is read, for a sparse stream above kMaxDensifiedDim unless `sparse_entries` is set.
void run_dump(const DumpOptions& options, std::ostream& out);

/// Writes the non-gap columns of `batch` (dense or sparse, float or double) with `%.6g`, one line per sample,
/// time-major. A sparse column is written as a dense row (the last of duplicate indices wins), or, with
/// `sparse_entries`, as its `index:value` entries in stored order separated by spaces. Time and memory are
/// linear in the columns and values written. Throws UsageError for a dense row of a sparse stream above
/// kMaxDensifiedDim.
void write_stream_batch(const StreamBatch& batch, std::ostream& out, bool sparse_entries = false);

}  // namespace cntkio::pipeline
