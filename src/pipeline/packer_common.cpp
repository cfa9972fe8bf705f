#include "pipeline/packer_common.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "pipeline/packer.hpp"

namespace cntkio::pipeline {

size_t local_minibatch_size(size_t minibatch_size, size_t num_workers, size_t worker_rank) {
  if (num_workers == 0) throw UsageError("The number of workers must be at least 1.");
  const size_t local = minibatch_size / num_workers + (minibatch_size % num_workers > worker_rank ? 1 : 0);
  // CNTK warns here and adjusts to one sample per worker.
  return std::max<size_t>(local, 1);
}

Layout make_packed_layout(const std::vector<size_t>& lengths) {
  Layout layout;
  make_packed_layout_into(lengths, layout);
  return layout;
}

void make_packed_layout_into(const std::vector<size_t>& lengths, Layout& layout) {
  const size_t width = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  thread_local std::vector<size_t> used;  // used[s]: time steps taken in row s
  used.clear();
  size_t first_open = 0;  // rows before it are full (every length is >= 1, so they stay full)
  layout.entries.clear();
  layout.entries.reserve(lengths.size() + 1);
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] == 0) throw UsageError("Sequences must be at least one frame long.");
    while (first_open < used.size() && used[first_open] == width) ++first_open;
    size_t s = first_open;
    while (s < used.size() && used[s] + lengths[i] > width) ++s;
    if (s == used.size()) used.push_back(0);
    const auto begin = static_cast<ptrdiff_t>(used[s]);
    layout.entries.push_back({i, s, begin, begin + static_cast<ptrdiff_t>(lengths[i]), false});
    used[s] += lengths[i];
  }
  for (size_t s = 0; s < used.size(); ++s) {
    if (used[s] < width) {
      layout.entries.push_back({packer_detail::kGapIndex, s, static_cast<ptrdiff_t>(used[s]),
                                static_cast<ptrdiff_t>(width), true});
    }
  }
  layout.num_parallel = used.size();
  layout.num_time_steps = width;
}

Layout make_frame_layout(size_t n) {
  Layout layout;
  make_frame_layout_into(n, layout);
  return layout;
}

void make_frame_layout_into(size_t n, Layout& layout) {
  layout.num_parallel = n;
  layout.num_time_steps = n == 0 ? 0 : 1;
  layout.entries.clear();
  layout.entries.reserve(n);
  for (size_t i = 0; i < n; ++i) layout.entries.push_back({i, i, 0, 1, false});
}

namespace packer_detail {

void check_stream_names(const std::vector<StreamInfo>& streams) {
  std::unordered_set<std::string> seen;
  for (const StreamInfo& s : streams) {
    if (!seen.insert(s.name).second) {
      throw UsageError("Two streams with the same name '" + s.name +
                       "' have been found. Please rename the duplicate.");
    }
  }
}

void check_configuration(const EpochConfiguration& config) {
  if (config.minibatch_size_in_samples == 0) throw UsageError("Minibatch size cannot be zero.");
  if (config.num_workers == 0) throw UsageError("The number of workers must be at least 1.");
  if (config.worker_rank >= config.num_workers) {
    throw UsageError("Worker rank " + std::to_string(config.worker_rank) +
                     " is not below the number of workers " + std::to_string(config.num_workers) + ".");
  }
}

void check_shape(const Sequences& sequences, size_t num_streams) {
  if (sequences.data.size() != num_streams) {
    throw Error("The sequence enumerator delivered " + std::to_string(sequences.data.size()) +
                " streams, expected " + std::to_string(num_streams) + ".");
  }
  for (const auto& stream : sequences.data) {
    if (stream.size() != sequences.keys.size()) {
      throw Error("The sequence enumerator delivered " + std::to_string(stream.size()) + " sequences with " +
                  std::to_string(sequences.keys.size()) + " keys.");
    }
  }
}

SourceLocation location(const StreamInfo& stream, const std::string& key) {
  SourceLocation where;
  where.stream = stream.name;
  where.sequence_key = key;
  return where;
}

std::optional<FormatError> with_origin(const FormatError& error, const Sequences& sequences,
                                       const SequenceEnumerator& source) {
  const SourceLocation& where = error.location();
  if (!where.file.empty() || where.sequence_key.empty()) return std::nullopt;
  for (const SequenceKey& key : sequences.keys) {
    if (source.key_to_string(key) != where.sequence_key) continue;
    const SourceLocation origin = source.sequence_location(key);
    if (origin.file.empty()) return std::nullopt;
    SourceLocation located = where;
    located.file = origin.file;
    located.line = origin.line;
    located.column = origin.column;
    located.byte_offset = origin.byte_offset;
    return FormatError(error.cntk_text(), located);
  }
  return std::nullopt;
}

namespace {
size_t product(std::span<const size_t> shape) {
  size_t n = 1;
  for (size_t d : shape) n *= d;
  return n;
}

void check_values(const StreamInfo& stream, const SequenceData& data, const std::string& key) {
  if (data.native != nullptr) {
    throw FormatError("Stream '" + stream.name +
                          "' delivered data that needs its transforms first (no transformer ran on it).",
                      location(stream, key));
  }
}
}  // namespace

std::vector<size_t> batch_sample_shape(const StreamInfo& stream, const std::vector<SequenceData>& data,
                                       const std::vector<std::string>& keys) {
  for (size_t j = 0; j < data.size(); ++j) check_values(stream, data[j], keys[j]);
  if (!stream.sample_shape.empty()) {
    const size_t dim = stream.sample_dim();
    for (size_t j = 0; j < data.size(); ++j) {
      if (!data[j].sample_shape.empty() && product(data[j].sample_shape) != dim) {
        throw FormatError("A sample of stream '" + stream.name + "' holds " +
                              std::to_string(product(data[j].sample_shape)) +
                              " values, but the stream's shape holds " + std::to_string(dim) + ".",
                          location(stream, keys[j]));
      }
    }
    return stream.sample_shape;
  }
  if (data.empty()) return {};
  if (data[0].sample_shape.empty()) {
    throw FormatError("Unknown shape of the sample in stream '" + stream.name + "'.",
                      location(stream, keys[0]));
  }
  std::vector<size_t> shape(data[0].sample_shape.begin(), data[0].sample_shape.end());
  for (size_t j = 1; j < data.size(); ++j) {
    if (!std::equal(shape.begin(), shape.end(), data[j].sample_shape.begin(), data[j].sample_shape.end())) {
      throw FormatError(
          "Packer currently does not support samples with varying shapes.Please make sure there is a "
          "transform "
          "that unifies the shape of samples for input stream '" +
              stream.name + "' or the deserializer provides samples with the same shape.",
          location(stream, keys[j]));
    }
  }
  return shape;
}

void check_fixed_shape(const StreamInfo& stream, const SequenceData& data, const std::string& key) {
  check_values(stream, data, key);
  if (stream.storage == StorageFormat::kDense && stream.sample_shape.empty()) {
    throw FormatError(
        "Stream '" + stream.name + "' has no fixed sample shape, which truncated BPTT packing requires.",
        location(stream, key));
  }
  if (!data.sample_shape.empty() && product(data.sample_shape) != stream.sample_dim()) {
    throw FormatError("A sample of stream '" + stream.name + "' does not match the stream's shape.",
                      location(stream, key));
  }
}

void prefetch_sequences(const Sequences& sequences, const std::vector<StreamInfo>& streams) {
  constexpr size_t kLinesPerArray = 4;  // enough for the short sequences where latency, not bandwidth, rules
  auto prefetch = [](const void* p, size_t bytes) {
    const auto* c = static_cast<const char*>(p);
    for (size_t at = 0; at < bytes && at < kLinesPerArray * 64; at += 64) __builtin_prefetch(c + at);
  };
  for (size_t i = 0; i < sequences.data.size() && i < streams.size(); ++i) {
    const size_t element = element_size(streams[i].element_type);
    for (const SequenceData& seq : sequences.data[i]) {
      if (seq.nnz_counts != nullptr) {
        prefetch(seq.nnz_counts, seq.number_of_samples * sizeof(uint32_t));
        prefetch(seq.indices, seq.total_nnz * sizeof(int32_t));
        prefetch(seq.values, seq.total_nnz * element);
      } else {
        prefetch(seq.values, seq.number_of_samples * streams[i].sample_dim() * element);
      }
    }
  }
}

void pack_dense(const StreamInfo& stream, const Layout& layout, const std::vector<SequenceData>& data,
                std::vector<unsigned char>& values) {
  const size_t sample_bytes = stream.sample_dim() * element_size(stream.element_type);
  // Every column written once: samples copied, gaps zeroed. That needs a layout whose entries cover each
  // column exactly once (every packed or frame layout); anything else is zeroed in full first.
  size_t covered = 0;
  for (const Layout::Entry& e : layout.entries) {
    const auto begin = static_cast<size_t>(std::max<ptrdiff_t>(e.t_begin, 0));
    covered += e.is_gap ? static_cast<size_t>(e.t_end) - std::min(begin, static_cast<size_t>(e.t_end))
                        : data[e.sequence_index].number_of_samples;
  }
  const bool exact = covered == layout.num_columns();
  // Over a reused buffer of the same size, resize writes nothing; a fresh one is zeroed by it anyway.
  if (exact) {
    values.resize(layout.num_columns() * sample_bytes);
  } else {
    values.assign(layout.num_columns() * sample_bytes, 0);
  }
  for (const Layout::Entry& e : layout.entries) {
    if (e.is_gap) {
      if (exact) {
        for (auto t = static_cast<size_t>(std::max<ptrdiff_t>(e.t_begin, 0));
             t < static_cast<size_t>(e.t_end); ++t) {
          std::memset(values.data() + (t * layout.num_parallel + e.row) * sample_bytes, 0, sample_bytes);
        }
      }
      continue;
    }
    const SequenceData& seq = data[e.sequence_index];
    const auto* src = static_cast<const unsigned char*>(seq.values);
    const auto begin = static_cast<size_t>(std::max<ptrdiff_t>(e.t_begin, 0));
    for (size_t t = 0; t < seq.number_of_samples; ++t) {
      const size_t column = (begin + t) * layout.num_parallel + e.row;
      std::memcpy(values.data() + column * sample_bytes, src + t * sample_bytes, sample_bytes);
    }
  }
}

namespace {

// pack_sparse for element type T. Columns are t-major (all rows of step 0, then step 1, ...), but each
// sequence's counts and entries are read in order, one sequence after another: reading them column by
// column instead jumps between as many places in the loaded chunks as there are parallel sequences, and a
// randomized minibatch pays a cache miss there for nearly every sample. Pass 1 counts the entries of each
// column, pass 2 copies each sample's entries to its column's place in the (small) output.
template <typename T>
void pack_sparse_as(const StreamInfo& stream, const Layout& layout, const std::vector<SequenceData>& data,
                    const std::vector<std::string>& keys, StreamBatch& out) {
  const size_t columns = layout.num_columns();
  std::vector<int32_t>& starts = out.col_starts;
  starts.assign(columns + 1, 0);
  // Pass 1: starts[c + 1] = entries of column c. A sequence whose counts exceed its entries is an error,
  // reported for the first such column in storage order (the order the columns are filled in).
  size_t bad_column = std::numeric_limits<size_t>::max();
  size_t bad_sequence = 0;
  // A randomized minibatch's sequences lie anywhere in the loaded chunks, mostly out of the cache: their
  // bytes are requested one sequence ahead, so that the misses overlap instead of coming one by one.
  auto prefetch = [](const void* p, size_t bytes) {
    const auto* c = static_cast<const char*>(p);
    for (size_t at = 0; at < bytes && at < 1024; at += 64) __builtin_prefetch(c + at);
  };
  for (size_t k = 0; k < layout.entries.size(); ++k) {
    const Layout::Entry& e = layout.entries[k];
    if (k + 1 < layout.entries.size() && !layout.entries[k + 1].is_gap) {
      const SequenceData& next = data[layout.entries[k + 1].sequence_index];
      prefetch(next.nnz_counts, next.number_of_samples * sizeof(uint32_t));
      prefetch(next.values, next.total_nnz * sizeof(T));
      prefetch(next.indices, next.total_nnz * sizeof(int32_t));
    }
    if (e.is_gap) continue;
    const SequenceData& seq = data[e.sequence_index];
    const auto begin = static_cast<size_t>(std::max<ptrdiff_t>(e.t_begin, 0));
    size_t used = 0;
    for (uint32_t t = 0; t < seq.number_of_samples; ++t) {
      const size_t column = (begin + t) * layout.num_parallel + e.row;
      const size_t count = seq.nnz_counts[t];
      if (used + count > seq.total_nnz) {
        if (column < bad_column) {
          bad_column = column;
          bad_sequence = e.sequence_index;
        }
        break;
      }
      used += count;
      starts[column + 1] = static_cast<int32_t>(count);
    }
  }
  if (bad_column != std::numeric_limits<size_t>::max()) {
    throw FormatError("The nnz counts of a sparse sequence exceed its number of entries.",
                      location(stream, keys[bad_sequence]));
  }
  for (size_t c = 0; c < columns; ++c) starts[c + 1] += starts[c];
  const auto nnz = static_cast<size_t>(starts[columns]);
  out.values.resize(nnz * sizeof(T));
  out.row_indices.resize(nnz);
  // Pass 2: each sample's entries to the start of its column (a column holds one sample).
  unsigned char* const values = out.values.data();
  int32_t* const indices = out.row_indices.data();
  for (const Layout::Entry& e : layout.entries) {
    if (e.is_gap) continue;
    const SequenceData& seq = data[e.sequence_index];
    const auto begin = static_cast<size_t>(std::max<ptrdiff_t>(e.t_begin, 0));
    size_t offset = 0;
    for (uint32_t t = 0; t < seq.number_of_samples; ++t) {
      const size_t count = seq.nnz_counts[t];
      if (count == 0) continue;  // an empty sample may come with null value pointers
      const auto to = static_cast<size_t>(starts[(begin + t) * layout.num_parallel + e.row]);
      const T* const src = static_cast<const T*>(seq.values) + offset;
      const int32_t* const src_indices = seq.indices + offset;
      for (size_t k = 0; k < count; ++k) {
        std::memcpy(values + (to + k) * sizeof(T), src + k, sizeof(T));
        indices[to + k] = src_indices[k];
      }
      offset += count;
    }
  }
}

}  // namespace

void pack_sparse(const StreamInfo& stream, const Layout& layout, const std::vector<SequenceData>& data,
                 const std::vector<std::string>& keys, StreamBatch& out) {
  size_t total = 0;
  for (const SequenceData& seq : data) total += seq.total_nnz;
  constexpr auto kMaxNnz = static_cast<size_t>(std::numeric_limits<int32_t>::max());
  if (total > kMaxNnz) {
    throw FormatError("Minibatch NNZ count (" + std::to_string(total) +
                          ") exceeds the maximum allowed value (" + std::to_string(kMaxNnz) + ")",
                      location(stream, {}));
  }
  if (element_size(stream.element_type) == sizeof(float)) {
    pack_sparse_as<float>(stream, layout, data, keys, out);
  } else {
    pack_sparse_as<double>(stream, layout, data, keys, out);
  }
}

namespace {
template <typename T>
void scatter(const SequenceData& data, size_t offset, size_t nnz, unsigned char* column) {
  const T* values = static_cast<const T*>(data.values) + offset;
  for (size_t k = 0; k < nnz; ++k) {
    const T v = values[k];
    std::memcpy(column + static_cast<size_t>(data.indices[offset + k]) * sizeof(T), &v, sizeof(T));
  }
}
}  // namespace

void write_sparse_sample_as_dense(const StreamInfo& stream, const SequenceData& data, size_t offset,
                                  size_t nnz, unsigned char* column, const std::string& key) {
  const size_t dim = stream.sample_dim();
  for (size_t k = 0; k < nnz; ++k) {
    const int32_t index = data.indices[offset + k];
    if (index < 0 || static_cast<size_t>(index) >= dim) {
      throw FormatError("Sparse index " + std::to_string(index) + " is out of range for dimension " +
                            std::to_string(dim) + ".",
                        location(stream, key));
    }
  }
  if (stream.element_type == ElementType::kFloat) {
    scatter<float>(data, offset, nnz, column);
  } else {
    scatter<double>(data, offset, nnz, column);
  }
}

}  // namespace packer_detail
}  // namespace cntkio::pipeline
