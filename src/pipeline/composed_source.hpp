// The MinibatchSource that drives a packer over an enumerator (composed_source.cpp), as
// MinibatchSource::create assembles it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cntkio/minibatch_source.hpp"
#include "core/thread_pool.hpp"
#include "pipeline/packer.hpp"
#include "pipeline/sequence_enumerator.hpp"
#include "pipeline/skip_report.hpp"
#include "pipeline/stage_times.hpp"

namespace cntkio::pipeline {

/// How a source runs.
struct ReaderSettings {
  bool prefetch = true;  ///< read the next minibatches while the caller works
  size_t threads = 1;    ///< chunk-loading threads (0 = load in the caller)
  int trace_level = 1;   ///< 0 errors only, 1 warnings, 2 info
};

/// What a source is made of.
struct SourceParts {
  std::shared_ptr<SequenceEnumerator> enumerator;
  std::unique_ptr<Packer> packer;
  size_t truncation_length = 0;  ///< truncated BPTT's length (0: not truncated)
  ReaderSettings settings;
  SkipSources skips;  ///< where the skip report comes from (also the deserializers whose inputs are checked)
  std::function<std::vector<std::string>()> describe;  ///< MinibatchSource::describe
  size_t partition_chunks = 0;                         ///< MinibatchSource::partition_chunks
  std::shared_ptr<StageTimes> times;                   ///< where the stages add their times (may be null)
  std::function<void(SourceStats&)> more_stats;        ///< adds the loader threads' and the cache's figures
  /// The loader threads: they also fetch and pack minibatches read ahead, where the packer plans (may be
  /// null).
  std::shared_ptr<core::ThreadPool> pool;
};

std::unique_ptr<MinibatchSource> make_composed_source(SourceParts parts);

}  // namespace cntkio::pipeline
