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
  const size_t width = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  std::vector<size_t> used;  // used[s]: time steps taken in row s
  size_t first_open = 0;     // rows before it are full (every length is >= 1, so they stay full)
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
  return layout;
}

Layout make_frame_layout(size_t n) {
  Layout layout;
  layout.num_parallel = n;
  layout.num_time_steps = n == 0 ? 0 : 1;
  layout.entries.reserve(n);
  for (size_t i = 0; i < n; ++i) layout.entries.push_back({i, i, 0, 1, false});
  return layout;
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

void pack_dense(const StreamInfo& stream, const Layout& layout, const std::vector<SequenceData>& data,
                std::vector<unsigned char>& values) {
  const size_t sample_bytes = stream.sample_dim() * element_size(stream.element_type);
  values.assign(layout.num_columns() * sample_bytes, 0);
  for (const Layout::Entry& e : layout.entries) {
    if (e.is_gap) continue;
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

// The column loop of pack_sparse for element type T: samples mostly hold a few entries (one, in one-hot
// data), so the entries are copied by inline loops rather than two library calls per sample.
template <typename T>
size_t pack_sparse_columns(const StreamInfo& stream, const std::vector<SequenceData>& data,
                           const std::vector<std::string>& keys,
                           const std::vector<std::pair<size_t, uint32_t>>& owner,
                           std::vector<size_t>& offsets, StreamBatch& out) {
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  unsigned char* const values = out.values.data();
  int32_t* const indices = out.row_indices.data();
  const size_t columns = owner.size();
  size_t nnz = 0;
  for (size_t c = 0; c < columns; ++c) {
    out.col_starts[c] = static_cast<int32_t>(nnz);
    const auto [i, sample] = owner[c];
    if (sample == kNone) continue;
    const SequenceData& seq = data[i];
    const size_t count = seq.nnz_counts[sample];
    if (count == 0) continue;  // an empty sample may come with null value pointers
    const size_t offset = offsets[i];
    if (offset + count > seq.total_nnz) {
      throw FormatError("The nnz counts of a sparse sequence exceed its number of entries.",
                        location(stream, keys[i]));
    }
    const T* const src = static_cast<const T*>(seq.values) + offset;
    const int32_t* const src_indices = seq.indices + offset;
    for (size_t k = 0; k < count; ++k) {
      std::memcpy(values + (nnz + k) * sizeof(T), src + k, sizeof(T));
      indices[nnz + k] = src_indices[k];
    }
    offsets[i] = offset + count;
    nnz += count;
  }
  return nnz;
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

  // owner[column] = (sequence, sample) or none; columns are then visited in storage order (t-major).
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  const size_t columns = layout.num_columns();
  std::vector<std::pair<size_t, uint32_t>> owner(columns, {0, kNone});
  for (const Layout::Entry& e : layout.entries) {
    if (e.is_gap) continue;
    const auto begin = static_cast<size_t>(std::max<ptrdiff_t>(e.t_begin, 0));
    for (uint32_t t = 0; t < data[e.sequence_index].number_of_samples; ++t) {
      owner[(begin + t) * layout.num_parallel + e.row] = {e.sequence_index, t};
    }
  }

  const size_t esize = element_size(stream.element_type);
  out.values.resize(total * esize);
  out.row_indices.resize(total);
  out.col_starts.resize(columns + 1);
  std::vector<size_t> offsets(data.size(), 0);  // entries of each sequence packed so far
  const size_t nnz = esize == sizeof(float)
                         ? pack_sparse_columns<float>(stream, data, keys, owner, offsets, out)
                         : pack_sparse_columns<double>(stream, data, keys, owner, offsets, out);
  out.col_starts[columns] = static_cast<int32_t>(nnz);
  // Entries beyond the per-sample counts are not part of any column.
  out.values.resize(nnz * esize);
  out.row_indices.resize(nnz);
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
