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
  size_t max_minibatches = 10;        ///< per epoch (CNTK's test harness writes at most 10)
  bool keys = false;                  ///< write sequence keys instead of values
  /// Receives what the reader skipped under maxErrors, also when an error ends the run; null: not wanted.
  SkipReport* skip_report = nullptr;
};

/// Builds the reader and writes the minibatches to `out`. Throws cntkio errors.
void run_dump(const DumpOptions& options, std::ostream& out);

/// Writes the non-gap columns of `batch` (dense or sparse, float or double) with `%.6g`, one line per sample.
void write_stream_batch(const StreamBatch& batch, std::ostream& out);

}  // namespace cntkio::pipeline
