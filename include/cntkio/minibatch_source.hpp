// MinibatchSource: the composable reader. Deserializers → (bundler) → randomizer → packer → minibatches.
//
// Built from a CNTK reader config section (`MinibatchSource::from_config`), it reproduces CNTK's minibatch
// stream: the same sequences in the same order and layout. Epochs follow CNTK's v1 (BrainScript) rules:
// epoch k covers the samples [k·E, (k+1)·E) of the endless global timeline, and `next_minibatch` returns
// false once the epoch is over.
//
// Thread-safety: not thread-safe; use one MinibatchSource per consuming thread. It may use background
// threads internally.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/minibatch.hpp"
#include "cntkio/stream.hpp"

namespace cntkio {

/// Epoch size meaning "one full sweep over the data".
constexpr size_t kFullSweep = static_cast<size_t>(-1) >> 2;

class MinibatchSource {
 public:
  virtual ~MinibatchSource() = default;

  /// Creates the reader described by a reader section (stand-alone `readerType` or composite
  /// `deserializers`). Relative file paths resolve against the current directory.
  static std::unique_ptr<MinibatchSource> from_config(const Config& reader_section);

  /// The streams of the minibatches, in order.
  virtual const std::vector<StreamInfo>& streams() const = 0;

  /// Starts epoch `epoch_index` of `epoch_size` samples (kFullSweep: one sweep) with minibatches of
  /// `minibatch_size` samples, reading the share of worker `worker_rank` of `num_workers`.
  virtual void start_epoch(size_t minibatch_size, size_t epoch_index, size_t epoch_size,
                           size_t worker_rank = 0, size_t num_workers = 1) = 0;

  /// Reads the next minibatch of the epoch into `out`; false when the epoch has no more data.
  virtual bool next_minibatch(Minibatch& out) = 0;

  /// Global sample position (scheduling samples) after the last minibatch returned.
  virtual size_t current_sample_position() const = 0;
};

}  // namespace cntkio
