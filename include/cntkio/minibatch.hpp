/// @file
/// Minibatch: the data of one read step, one StreamBatch per stream, each with its layout.
///
/// Layout (CNTK's MBLayout): `num_parallel` rows × `num_time_steps` columns of time. Column index of time
/// step t of parallel row s is t * num_parallel + s ("time-major"). Sequences are placed in rows; parts of
/// rows that hold no sequence are gaps. Each stream has its own layout because streams of one sequence may
/// have different lengths.
///
/// Dense values: num_columns() * sample_dim values, column-major (one column = one sample), element type per
/// the stream; gap columns are zero. Sparse values: CSC with one column per sample: `col_starts` has
/// num_columns()+1 entries, `row_indices`/values hold the entries column by column in stored order.
///
/// Thread-safety: plain value types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cntkio/stream.hpp"

namespace cntkio {

/// Placement of sequences in a minibatch of one stream.
struct Layout {
  /// One sequence (or one gap) in the layout. `t_begin` may be negative and `t_end` may exceed
  /// num_time_steps for sequences that continue across minibatches (truncated BPTT).
  struct Entry {
    size_t sequence_index = 0;  ///< index into Minibatch::keys (meaningless for gaps)
    size_t row = 0;             ///< parallel row s
    ptrdiff_t t_begin = 0;      ///< first time step of the sequence (or gap) in this minibatch's time axis
    ptrdiff_t t_end = 0;        ///< one past its last time step
    bool is_gap = false;        ///< whether this entry is a gap rather than a sequence
  };

  size_t num_parallel = 0;     ///< rows: sequences placed side by side
  size_t num_time_steps = 0;   ///< columns of time
  std::vector<Entry> entries;  ///< sequences in placement order, then gaps

  /// Columns of the minibatch, num_parallel * num_time_steps (samples plus gap columns).
  size_t num_columns() const { return num_parallel * num_time_steps; }
  /// Whether column (row s, time step t) lies in a gap.
  bool is_gap(size_t s, size_t t) const;
  /// Number of non-gap entries.
  size_t num_sequences() const;
  /// Number of non-gap columns.
  size_t num_samples() const;
  /// Same shape and the same entries in the same order.
  friend bool operator==(const Layout&, const Layout&);
};

/// The data of one stream in one minibatch.
struct StreamBatch {
  StreamInfo info;                    ///< the stream (shape, storage, element type)
  Layout layout;                      ///< where the sequences sit
  std::vector<unsigned char> values;  ///< dense: num_columns*dim values; sparse: nnz values (element type)
  std::vector<int32_t> row_indices;   ///< sparse only
  std::vector<int32_t> col_starts;    ///< sparse only, num_columns + 1 entries

  /// Value access for dense float/double data (index = column * dim + row).
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(values.data());
  }
  /// Value of dense or sparse data at (row, column) as double.
  double value_at(size_t row, size_t column) const;
  /// Sparse: number of stored entries (col_starts.back()); 0 for dense data.
  size_t nnz() const { return col_starts.empty() ? 0 : static_cast<size_t>(col_starts.back()); }
};

/// One minibatch.
struct Minibatch {
  bool end_of_sweep = false;         ///< the data reaches (or crosses) the end of a sweep
  bool end_of_epoch = false;         ///< the data reaches the end of the epoch
  std::vector<StreamBatch> streams;  ///< in the source's stream order
  std::vector<std::string> keys;     ///< sequence keys, indexed by Layout::Entry::sequence_index
  /// Set only in minibatches of a source asked to defer values (MinibatchSource::defer_values): every
  /// stream's info and layout are filled but not its values, index or column vectors; the sequences' values
  /// stay where the deserializers put them, and this holds them (an internal pipeline::DeferredValues), for
  /// a consumer that writes them once, straight where it wants them.
  std::shared_ptr<const void> deferred_values;
  /// Whether the minibatch holds no sequence.
  bool empty() const { return streams.empty() || streams[0].layout.entries.empty(); }
};

}  // namespace cntkio
