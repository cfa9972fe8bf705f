#include "arrays.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "cntkio/errors.hpp"
#include "pipeline/packer.hpp"
#include "pipeline/packer_common.hpp"

namespace py = pybind11;

namespace cntkio::python {
namespace {

// One sequence (non-gap layout entry) and the time steps of it that lie inside this minibatch.
struct Placed {
  size_t sequence_index;
  size_t row;
  ptrdiff_t t_begin;
  ptrdiff_t t_end;
  size_t visible_begin;
  size_t visible_end;
  size_t length() const { return visible_end - visible_begin; }
};

std::vector<Placed> placed_sequences(const Layout& layout) {
  std::vector<Placed> out;
  out.reserve(layout.entries.size());
  const auto steps = static_cast<ptrdiff_t>(layout.num_time_steps);
  for (const Layout::Entry& e : layout.entries) {
    if (e.is_gap) continue;
    const ptrdiff_t begin = std::clamp<ptrdiff_t>(e.t_begin, 0, steps);
    const ptrdiff_t end = std::clamp<ptrdiff_t>(e.t_end, begin, steps);
    out.push_back(Placed{e.sequence_index, e.row, e.t_begin, e.t_end, static_cast<size_t>(begin),
                         static_cast<size_t>(end)});
  }
  return out;
}

// Keeps the minibatch alive for as long as a NumPy array views its buffers.
py::capsule owner_of(const std::shared_ptr<const Minibatch>& minibatch) {
  auto* holder = new std::shared_ptr<const Minibatch>(minibatch);
  return py::capsule(holder, [](void* p) { delete static_cast<std::shared_ptr<const Minibatch>*>(p); });
}

py::dtype dtype_of(ElementType type) {
  return type == ElementType::kFloat ? py::dtype::of<float>() : py::dtype::of<double>();
}

// NumPy shape of one sample: CNTK's column-major sample shape reversed (as cntk.io does).
std::vector<py::ssize_t> numpy_sample_shape(const StreamInfo& info) {
  std::vector<py::ssize_t> shape;
  for (auto it = info.sample_shape.rbegin(); it != info.sample_shape.rend(); ++it) {
    shape.push_back(static_cast<py::ssize_t>(*it));
  }
  return shape;
}

std::vector<py::ssize_t> c_strides(const std::vector<py::ssize_t>& shape, py::ssize_t item_size) {
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = item_size;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

template <typename T>
py::array_t<T> new_array(const std::vector<py::ssize_t>& shape) {
  py::array_t<T> a(shape);
  std::memset(a.mutable_data(), 0, static_cast<size_t>(a.nbytes()));
  return a;
}

py::array_t<int64_t> int64_vector(const std::vector<int64_t>& values) {
  py::array_t<int64_t> a(static_cast<py::ssize_t>(values.size()));
  if (!values.empty()) std::memcpy(a.mutable_data(), values.data(), values.size() * sizeof(int64_t));
  return a;
}

// Mask of a one-row-per-sequence array [n, max_length]: 2 at a sequence's first sample, 1 after it, 0
// padding.
py::array_t<uint8_t> sequence_mask(const std::vector<Placed>& seqs, size_t max_length) {
  auto mask =
      new_array<uint8_t>({static_cast<py::ssize_t>(seqs.size()), static_cast<py::ssize_t>(max_length)});
  uint8_t* m = mask.mutable_data();
  for (size_t k = 0; k < seqs.size(); ++k) {
    uint8_t* row = m + k * max_length;
    std::fill(row, row + seqs[k].length(), uint8_t{1});
    if (seqs[k].t_begin >= 0 && seqs[k].length() > 0) row[0] = 2;
  }
  return mask;
}

// Mask of CNTK's packed rows [num_parallel, num_time_steps] (truncated BPTT).
py::array_t<uint8_t> packed_mask(const Layout& layout, const std::vector<Placed>& seqs) {
  const size_t steps = layout.num_time_steps;
  auto mask =
      new_array<uint8_t>({static_cast<py::ssize_t>(layout.num_parallel), static_cast<py::ssize_t>(steps)});
  uint8_t* m = mask.mutable_data();
  for (const Placed& p : seqs) {
    uint8_t* row = m + p.row * steps;
    std::fill(row + p.visible_begin, row + p.visible_end, uint8_t{1});
    if (p.t_begin >= 0 && static_cast<size_t>(p.t_begin) < steps) row[p.t_begin] = 2;
  }
  return mask;
}

py::array dense_value(const std::shared_ptr<const Minibatch>& minibatch, const StreamBatch& batch,
                      const std::vector<Placed>& seqs, PackingMode mode, size_t max_length, bool& zero_copy) {
  const Layout& layout = batch.layout;
  const py::dtype dtype = dtype_of(batch.info.element_type);
  const auto item = static_cast<py::ssize_t>(element_size(batch.info.element_type));
  const std::vector<py::ssize_t> sample = numpy_sample_shape(batch.info);
  const std::vector<py::ssize_t> sample_strides = c_strides(sample, item);
  const size_t dim = batch.info.sample_dim();
  const auto column_bytes = static_cast<py::ssize_t>(dim) * item;
  const auto parallel = static_cast<py::ssize_t>(layout.num_parallel);
  auto* base = const_cast<unsigned char*>(batch.values.data());  // the array owns a reference, not a copy

  // One row per sequence, each starting at time 0 of its own layout row k: the buffer [T, P, dim] viewed as
  // [P, T, dim] is the answer.
  bool rows_are_sequences = seqs.size() == layout.num_parallel;
  for (size_t k = 0; rows_are_sequences && k < seqs.size(); ++k) {
    rows_are_sequences = seqs[k].row == k && seqs[k].visible_begin == 0;
  }

  std::vector<py::ssize_t> shape, strides;
  if (mode == PackingMode::kTruncated ||
      (mode == PackingMode::kSequence && rows_are_sequences && max_length == layout.num_time_steps)) {
    shape = {parallel, static_cast<py::ssize_t>(layout.num_time_steps)};
    strides = {column_bytes, parallel * column_bytes};
  } else if (mode == PackingMode::kFrame && rows_are_sequences && layout.num_time_steps == 1) {
    shape = {parallel};
    strides = {column_bytes};
  }
  if (!shape.empty()) {
    zero_copy = true;
    shape.insert(shape.end(), sample.begin(), sample.end());
    strides.insert(strides.end(), sample_strides.begin(), sample_strides.end());
    return py::array(dtype, shape, strides, base, owner_of(minibatch));
  }

  // Gather: sequence k's samples go to row k (sequence mode) or consecutively (frame mode).
  zero_copy = false;
  size_t total = 0;
  for (const Placed& p : seqs) total += p.length();
  if (mode == PackingMode::kFrame) {
    shape = {static_cast<py::ssize_t>(total)};
  } else {
    shape = {static_cast<py::ssize_t>(seqs.size()), static_cast<py::ssize_t>(max_length)};
  }
  shape.insert(shape.end(), sample.begin(), sample.end());
  py::array out(dtype, shape);
  auto* dst = static_cast<unsigned char*>(out.mutable_data());
  std::memset(dst, 0, static_cast<size_t>(out.nbytes()));
  const auto bytes = static_cast<size_t>(column_bytes);
  size_t next = 0;
  for (const Placed& p : seqs) {
    size_t out_row = mode == PackingMode::kFrame ? next : next * max_length;
    for (size_t t = p.visible_begin; t < p.visible_end; ++t, ++out_row) {
      const size_t column = t * layout.num_parallel + p.row;
      std::memcpy(dst + out_row * bytes, base + column * bytes, bytes);
    }
    next += mode == PackingMode::kFrame ? p.length() : 1;
  }
  return out;
}

void sparse_arrays(const std::shared_ptr<const Minibatch>& minibatch, const StreamBatch& batch,
                   const std::vector<Placed>& seqs, py::dict& out, bool& zero_copy) {
  const Layout& layout = batch.layout;
  const py::dtype dtype = dtype_of(batch.info.element_type);
  const size_t item = element_size(batch.info.element_type);
  std::vector<size_t> columns;  // the minibatch columns of the rows of the CSR matrix, in sequence order
  for (const Placed& p : seqs) {
    for (size_t t = p.visible_begin; t < p.visible_end; ++t)
      columns.push_back(t * layout.num_parallel + p.row);
  }
  zero_copy = columns.size() == layout.num_columns();
  for (size_t i = 0; zero_copy && i < columns.size(); ++i) zero_copy = columns[i] == i;
  if (zero_copy) {
    py::capsule owner = owner_of(minibatch);
    const auto nnz = static_cast<py::ssize_t>(batch.nnz());
    out["data"] = py::array(dtype, {nnz}, {static_cast<py::ssize_t>(item)},
                            const_cast<unsigned char*>(batch.values.data()), owner);
    out["indices"] = py::array_t<int32_t>({nnz}, {static_cast<py::ssize_t>(sizeof(int32_t))},
                                          const_cast<int32_t*>(batch.row_indices.data()), owner);
    out["indptr"] = py::array_t<int32_t>({static_cast<py::ssize_t>(batch.col_starts.size())},
                                         {static_cast<py::ssize_t>(sizeof(int32_t))},
                                         const_cast<int32_t*>(batch.col_starts.data()), owner);
    return;
  }
  size_t nnz = 0;
  for (size_t c : columns) nnz += static_cast<size_t>(batch.col_starts[c + 1] - batch.col_starts[c]);
  py::array data(dtype, std::vector<py::ssize_t>{static_cast<py::ssize_t>(nnz)});
  py::array_t<int32_t> indices(static_cast<py::ssize_t>(nnz));
  py::array_t<int32_t> indptr(static_cast<py::ssize_t>(columns.size() + 1));
  auto* d = static_cast<unsigned char*>(data.mutable_data());
  int32_t* ind = indices.mutable_data();
  int32_t* ptr = indptr.mutable_data();
  size_t at = 0;
  ptr[0] = 0;
  for (size_t r = 0; r < columns.size(); ++r) {
    const auto begin = static_cast<size_t>(batch.col_starts[columns[r]]);
    const auto end = static_cast<size_t>(batch.col_starts[columns[r] + 1]);
    const size_t count = end - begin;
    if (count > 0) {
      std::memcpy(d + at * item, batch.values.data() + begin * item, count * item);
      std::memcpy(ind + at, batch.row_indices.data() + begin, count * sizeof(int32_t));
    }
    at += count;
    ptr[r + 1] = static_cast<int32_t>(at);
  }
  out["data"] = data;
  out["indices"] = indices;
  out["indptr"] = indptr;
}

// -- torch_item

// One tensor of an item: where it goes in the buffer and what it holds.
struct Planned {
  std::string key;
  const char* dtype;
  std::vector<py::ssize_t> shape;
  size_t offset = 0;
  size_t nbytes = 0;
};

// What one stream contributes, and the facts its writer needs.
struct StreamPlan {
  const StreamBatch* batch = nullptr;
  std::vector<Placed> seqs;
  size_t samples = 0;
  size_t max_length = 0;
  size_t width = 1;  // sparse indices: nnz slots per sample
  size_t first = 0;  // index of its first Planned
};

const char* dtype_name(ElementType type) {
  return type == ElementType::kFloat ? "float32" : "float64";
}

size_t product(const std::vector<py::ssize_t>& shape) {
  size_t n = 1;
  for (py::ssize_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

// Calls f(out_row, column) for every sample, out_row counting the padded [rows, steps] places (sequence
// mode: sequence k's sample j at k * max_length + j) or the samples (frame mode).
template <typename F>
void for_each_sample(const StreamPlan& p, bool frame, F&& f) {
  const size_t parallel = p.batch->layout.num_parallel;
  size_t next = 0;
  for (size_t k = 0; k < p.seqs.size(); ++k) {
    const Placed& s = p.seqs[k];
    size_t out_row = frame ? next : k * p.max_length;
    for (size_t t = s.visible_begin; t < s.visible_end; ++t, ++out_row) f(out_row, t * parallel + s.row);
    next += s.length();
  }
}

template <typename T>
void write_sparse_dense(const StreamPlan& p, bool frame, unsigned char* dst) {
  const StreamBatch& b = *p.batch;
  const size_t dim = b.info.sample_dim();
  const T* values = b.data<T>();
  T* out = reinterpret_cast<T*>(dst);
  for_each_sample(p, frame, [&](size_t out_row, size_t column) {
    for (auto i = b.col_starts[column]; i < b.col_starts[column + 1]; ++i) {
      out[out_row * dim + static_cast<size_t>(b.row_indices[i])] = values[i];  // duplicates: the last wins
    }
  });
}

template <typename T>
void write_sparse_indices(const StreamPlan& p, bool frame, unsigned char* indices_dst,
                          unsigned char* values_dst) {
  const StreamBatch& b = *p.batch;
  const T* values = b.data<T>();
  auto* indices = reinterpret_cast<int64_t*>(indices_dst);
  T* out = reinterpret_cast<T*>(values_dst);
  for_each_sample(p, frame, [&](size_t out_row, size_t column) {
    size_t slot = out_row * p.width;
    for (auto i = b.col_starts[column]; i < b.col_starts[column + 1]; ++i, ++slot) {
      indices[slot] = b.row_indices[i];
      out[slot] = values[i];
    }
  });
}

// -- the same from a minibatch with deferred values (Minibatch::deferred_values): each sequence's samples
// are read where the deserializer left them, in the layout's sequence order (Placed::sequence_index).

// Widest sample (most entries) of a sparse stream; checks each sequence's counts against its entries as
// the packer does (same error).
size_t deferred_sparse_width(const StreamInfo& stream, const std::vector<SequenceData>& data,
                             const std::vector<std::string>& keys) {
  size_t width = 1;
  size_t total = 0;
  for (size_t j = 0; j < data.size(); ++j) {
    const SequenceData& seq = data[j];
    total += seq.total_nnz;
    size_t used = 0;
    for (uint32_t t = 0; t < seq.number_of_samples; ++t) {
      used += seq.nnz_counts[t];
      width = std::max<size_t>(width, seq.nnz_counts[t]);
    }
    if (used > seq.total_nnz) {
      throw FormatError("The nnz counts of a sparse sequence exceed its number of entries.",
                        pipeline::packer_detail::location(stream, keys[j]));
    }
  }
  constexpr auto kMaxNnz = static_cast<size_t>(std::numeric_limits<int32_t>::max());
  if (total > kMaxNnz) {
    throw FormatError("Minibatch NNZ count (" + std::to_string(total) +
                          ") exceeds the maximum allowed value (" + std::to_string(kMaxNnz) + ")",
                      pipeline::packer_detail::location(stream, {}));
  }
  return width;
}

// How many sequences ahead of the one copied the cache is asked for the next one's bytes: a randomized
// minibatch's sequences lie all over the loaded chunks, and the misses of several then overlap.
constexpr size_t kAhead = 8;

void prefetch_bytes(const void* p, size_t bytes) {
  const auto* c = static_cast<const char*>(p);
  for (size_t at = 0; at < bytes && at < 1024; at += 64) __builtin_prefetch(c + at);
}

// Calls f(out_row, sequence, first, count) for every sample of every placed sequence of a sparse stream
// of T values: the sample's entries are [first, first + count) of the sequence's (out_row as
// for_each_sample).
template <typename T, typename F>
void for_each_deferred_sparse_sample(const StreamPlan& p, bool frame, const std::vector<SequenceData>& data,
                                     F&& f) {
  size_t next = 0;
  for (size_t k = 0; k < p.seqs.size(); ++k) {
    const Placed& s = p.seqs[k];
    const SequenceData& seq = data[s.sequence_index];
    if (k + kAhead < p.seqs.size()) {
      const SequenceData& later = data[p.seqs[k + kAhead].sequence_index];
      prefetch_bytes(later.nnz_counts, later.number_of_samples * sizeof(uint32_t));
      prefetch_bytes(later.indices, later.total_nnz * sizeof(int32_t));
      prefetch_bytes(later.values, later.total_nnz * sizeof(T));
    }
    size_t out_row = frame ? next : k * p.max_length;
    size_t first = 0;
    for (size_t t = 0; t < s.length(); ++t, ++out_row) {
      f(out_row, seq, first, static_cast<size_t>(seq.nnz_counts[t]));
      first += seq.nnz_counts[t];
    }
    next += s.length();
  }
}

template <typename T>
void write_deferred_sparse_dense(const StreamPlan& p, bool frame, const std::vector<SequenceData>& data,
                                 unsigned char* dst) {
  const StreamInfo& info = p.batch->info;
  const size_t dim = info.sample_dim();
  T* out = reinterpret_cast<T*>(dst);
  for_each_deferred_sparse_sample<T>(
      p, frame, data, [&](size_t out_row, const SequenceData& seq, size_t first, size_t count) {
        const T* values = static_cast<const T*>(seq.values);
        for (size_t e = first; e < first + count; ++e) {
          const auto index = static_cast<size_t>(seq.indices[e]);
          if (index >= dim) {  // the deserializers check their indices; this only keeps the write in bounds
            throw FormatError("Sparse index " + std::to_string(seq.indices[e]) +
                                  " is out of range for dimension " + std::to_string(dim) + ".",
                              pipeline::packer_detail::location(info, {}));
          }
          out[out_row * dim + index] = values[e];  // duplicates: the last wins, as CNTK's sparse-to-dense
        }
      });
}

template <typename T>
void write_deferred_sparse_indices(const StreamPlan& p, bool frame, const std::vector<SequenceData>& data,
                                   unsigned char* indices_dst, unsigned char* values_dst) {
  auto* indices = reinterpret_cast<int64_t*>(indices_dst);
  T* out = reinterpret_cast<T*>(values_dst);
  for_each_deferred_sparse_sample<T>(
      p, frame, data, [&](size_t out_row, const SequenceData& seq, size_t first, size_t count) {
        const T* values = static_cast<const T*>(seq.values);
        const size_t slot = out_row * p.width;
        for (size_t e = 0; e < count; ++e) {
          indices[slot + e] = seq.indices[first + e];
          out[slot + e] = values[first + e];
        }
      });
}

// The sample at `out_row` of a one-hot stream was not one entry of value 1: the error names where.
[[noreturn]] void not_one_hot(const StreamPlan& p, bool frame, size_t k, size_t step,
                              const std::vector<std::string>& keys) {
  const Placed& s = p.seqs[k];
  const std::string key = s.sequence_index < keys.size() ? keys[s.sequence_index] : std::to_string(k);
  throw std::invalid_argument("cntkio.torch: as_indices: sample" +
                              (frame ? std::string() : " at step " + std::to_string(step)) +
                              " of sequence '" + key + "' in stream '" + p.batch->info.name +
                              "' is not one-hot (one index with value 1)");
}

// Class indices of a one-hot stream: each sample's one index, `pad` in the padding.
template <typename T>
void write_class_indices(const StreamPlan& p, bool frame, int64_t pad, const std::vector<std::string>& keys,
                         const std::vector<SequenceData>* from, int64_t* out, size_t count) {
  size_t next = 0;  // each place is written once: a sample's class, or the padding after the sequence
  for (size_t k = 0; k < p.seqs.size(); ++k) {
    const Placed& s = p.seqs[k];
    size_t out_row = frame ? next : k * p.max_length;
    if (from != nullptr) {
      const SequenceData& seq = (*from)[s.sequence_index];
      if (k + kAhead < p.seqs.size()) {  // as for_each_deferred_sparse_sample
        const SequenceData& later = (*from)[p.seqs[k + kAhead].sequence_index];
        prefetch_bytes(later.nnz_counts, later.number_of_samples * sizeof(uint32_t));
        prefetch_bytes(later.indices, later.total_nnz * sizeof(int32_t));
        prefetch_bytes(later.values, later.total_nnz * sizeof(T));
      }
      const T* values = static_cast<const T*>(seq.values);
      size_t first = 0;
      for (size_t t = 0; t < s.length(); ++t, ++out_row) {
        if (seq.nnz_counts[t] != 1 || values[first] != T(1)) not_one_hot(p, frame, k, t, keys);
        out[out_row] = seq.indices[first];
        first += seq.nnz_counts[t];
      }
    } else {
      const StreamBatch& b = *p.batch;
      const T* values = b.data<T>();
      const size_t parallel = b.layout.num_parallel;
      for (size_t t = s.visible_begin; t < s.visible_end; ++t, ++out_row) {
        const size_t column = t * parallel + s.row;
        const auto begin = b.col_starts[column];
        if (b.col_starts[column + 1] - begin != 1 || values[begin] != T(1)) {
          not_one_hot(p, frame, k, t - s.visible_begin, keys);
        }
        out[out_row] = b.row_indices[begin];
      }
    }
    if (!frame) std::fill(out + out_row, out + (k + 1) * p.max_length, pad);
    next += s.length();
  }
  // None is left as planned; anything past the rows written holds the padding too.
  std::fill(out + (frame ? next : p.seqs.size() * p.max_length), out + count, pad);
}

// Where every tensor of one item goes (offsets from the item's start) and what each stream needs to write it.
struct ItemPlan {
  std::shared_ptr<const Minibatch> minibatch;
  const pipeline::DeferredValues* deferred = nullptr;
  bool frame = false;
  SparseItem sparse = SparseItem::kIndices;
  std::vector<StreamPlan> streams;
  std::vector<Planned> plan;
  size_t end = 0;  // bytes from the item's start to the end of its last tensor, rounded up to `align`
};

ItemPlan plan_item(std::shared_ptr<const Minibatch> minibatch, PackingMode mode, SparseItem sparse,
                   size_t align, size_t header, const std::map<std::string, int64_t>& class_pads) {
  if (mode == PackingMode::kTruncated) throw std::invalid_argument("torch_item: truncated BPTT packing");
  ItemPlan item;
  item.minibatch = std::move(minibatch);
  item.frame = mode == PackingMode::kFrame;
  item.sparse = sparse;
  item.deferred = static_cast<const pipeline::DeferredValues*>(item.minibatch->deferred_values.get());
  const bool frame = item.frame;
  const auto* deferred = item.deferred;
  std::vector<StreamPlan>& streams = item.streams;
  std::vector<Planned>& plan = item.plan;
  streams.resize(item.minibatch->streams.size());
  size_t end = header;
  auto add = [&](std::string key, const char* dtype, std::vector<py::ssize_t> shape, size_t size) {
    Planned t{std::move(key), dtype, std::move(shape)};
    t.offset = end;
    t.nbytes = product(t.shape) * size;
    end += (t.nbytes + align - 1) / align * align;
    plan.push_back(std::move(t));
  };
  for (size_t i = 0; i < streams.size(); ++i) {
    StreamPlan& p = streams[i];
    const StreamBatch& b = item.minibatch->streams[i];
    p.batch = &b;
    p.seqs = placed_sequences(b.layout);
    for (const Placed& s : p.seqs) {
      p.samples += s.length();
      p.max_length = std::max(p.max_length, s.length());
    }
    p.first = plan.size();
    const auto rows = static_cast<py::ssize_t>(p.seqs.size());
    const auto steps = static_cast<py::ssize_t>(p.max_length);
    std::vector<py::ssize_t> lead = frame ? std::vector<py::ssize_t>{static_cast<py::ssize_t>(p.samples)}
                                          : std::vector<py::ssize_t>{rows, steps};
    const std::string& name = b.info.name;
    const char* dtype = dtype_name(b.info.element_type);
    const size_t size = element_size(b.info.element_type);
    if (b.info.storage != StorageFormat::kSparseCsc) {
      std::vector<py::ssize_t> shape = lead;
      for (py::ssize_t d : numpy_sample_shape(b.info)) shape.push_back(d);
      add(name, dtype, shape, size);
    } else if (sparse == SparseItem::kDense) {
      std::vector<py::ssize_t> shape = lead;
      shape.push_back(static_cast<py::ssize_t>(b.info.sample_dim()));
      add(name, dtype, shape, size);
    } else if (class_pads.count(name) != 0) {
      add(name, "int64", lead, sizeof(int64_t));
    } else {
      if (deferred != nullptr) {
        p.width = std::max(p.width,
                           deferred_sparse_width(b.info, deferred->sequences.data[i], item.minibatch->keys));
      } else {
        for_each_sample(p, frame, [&](size_t, size_t column) {
          p.width = std::max(p.width, static_cast<size_t>(b.col_starts[column + 1] - b.col_starts[column]));
        });
      }
      std::vector<py::ssize_t> shape = lead;
      shape.push_back(static_cast<py::ssize_t>(p.width));
      add(name, "int64", shape, sizeof(int64_t));
      add(name + "_values", dtype, shape, size);
    }
    if (!frame) {
      add(name + "_mask", "uint8", {rows, steps}, 1);
      add(name + "_lengths", "int64", {rows}, sizeof(int64_t));
    }
  }
  item.end = end;
  return item;
}

// Writes the item `item` plans at `base` (its start). Runs without the GIL.
void write_item(const ItemPlan& item, unsigned char* base, const std::map<std::string, int64_t>& class_pads) {
  const bool frame = item.frame;
  const auto* deferred = item.deferred;
  const std::vector<Planned>& plan = item.plan;
  for (size_t i = 0; i < item.streams.size(); ++i) {
    const StreamPlan& p = item.streams[i];
    const StreamBatch& b = *p.batch;
    const ElementType type = b.info.element_type;
    const Planned& main = plan[p.first];
    unsigned char* dst = base + main.offset;
    size_t next = p.first + 1;
    const std::vector<SequenceData>* from = deferred != nullptr ? &deferred->sequences.data[i] : nullptr;
    if (b.info.storage != StorageFormat::kSparseCsc) {
      const size_t bytes = b.info.sample_dim() * element_size(type);
      if (from != nullptr) {
        size_t out_row = 0;  // a sequence's samples lie together in both places: one copy each
        for (size_t k = 0; k < p.seqs.size(); ++k) {
          const Placed& s = p.seqs[k];
          if (k + kAhead < p.seqs.size()) {
            const Placed& later = p.seqs[k + kAhead];
            prefetch_bytes((*from)[later.sequence_index].values, later.length() * bytes);
          }
          if (!frame) out_row = k * p.max_length;
          std::memcpy(dst + out_row * bytes, (*from)[s.sequence_index].values, s.length() * bytes);
          out_row += s.length();
        }
      } else {
        for_each_sample(p, frame, [&](size_t out_row, size_t column) {
          std::memcpy(dst + out_row * bytes, b.values.data() + column * bytes, bytes);
        });
      }
      if (!frame) {  // zero the padding after each sequence (the buffer is not zeroed)
        for (size_t k = 0; k < p.seqs.size(); ++k) {
          const size_t length = p.seqs[k].length();
          std::memset(dst + (k * p.max_length + length) * bytes, 0, (p.max_length - length) * bytes);
        }
      }
    } else if (item.sparse == SparseItem::kDense) {
      std::memset(dst, 0, main.nbytes);
      if (from != nullptr) {
        if (type == ElementType::kFloat) {
          write_deferred_sparse_dense<float>(p, frame, *from, dst);
        } else {
          write_deferred_sparse_dense<double>(p, frame, *from, dst);
        }
      } else if (type == ElementType::kFloat) {
        write_sparse_dense<float>(p, frame, dst);
      } else {
        write_sparse_dense<double>(p, frame, dst);
      }
    } else if (const auto pad = class_pads.find(b.info.name); pad != class_pads.end()) {
      auto* out = reinterpret_cast<int64_t*>(dst);
      const size_t count = main.nbytes / sizeof(int64_t);
      const std::vector<std::string>& keys = item.minibatch->keys;
      if (type == ElementType::kFloat) {
        write_class_indices<float>(p, frame, pad->second, keys, from, out, count);
      } else {
        write_class_indices<double>(p, frame, pad->second, keys, from, out, count);
      }
    } else {
      const Planned& values = plan[next++];
      std::fill_n(reinterpret_cast<int64_t*>(dst), main.nbytes / sizeof(int64_t), int64_t{-1});
      std::memset(base + values.offset, 0, values.nbytes);
      if (from != nullptr) {
        if (type == ElementType::kFloat) {
          write_deferred_sparse_indices<float>(p, frame, *from, dst, base + values.offset);
        } else {
          write_deferred_sparse_indices<double>(p, frame, *from, dst, base + values.offset);
        }
      } else if (type == ElementType::kFloat) {
        write_sparse_indices<float>(p, frame, dst, base + values.offset);
      } else {
        write_sparse_indices<double>(p, frame, dst, base + values.offset);
      }
    }
    if (!frame) {
      uint8_t* mask = base + plan[next].offset;
      auto* lengths = reinterpret_cast<int64_t*>(base + plan[next + 1].offset);
      for (size_t k = 0; k < p.seqs.size(); ++k) {  // rows: the sequences, each max_length long
        const Placed& s = p.seqs[k];
        uint8_t* row = mask + k * p.max_length;
        std::fill(row, row + s.length(), uint8_t{1});
        std::fill(row + s.length(), row + p.max_length, uint8_t{0});
        if (s.t_begin >= 0 && s.length() > 0) row[0] = 2;
        lengths[k] = static_cast<int64_t>(s.length());
      }
    }
  }
  // The values were copied from the chunks only now: an input cut meanwhile gave zeros it never held.
  if (deferred != nullptr && deferred->check_inputs) deferred->check_inputs();
}

// (key, dtype name, shape, byte offset, nbytes) of every tensor of `item`, placed `shift` bytes into the
// buffer.
py::list item_entries(const ItemPlan& item, size_t shift) {
  py::list entries;
  for (const Planned& t : item.plan) {
    py::tuple shape(t.shape.size());
    for (size_t i = 0; i < t.shape.size(); ++i) shape[i] = t.shape[i];
    entries.append(py::make_tuple(t.key, t.dtype, shape, shift + t.offset, t.nbytes));
  }
  return entries;
}

// allocate(nbytes) as a writable byte buffer of at least nbytes.
unsigned char* allocated(const py::object& buffer, size_t nbytes) {
  py::buffer_info info = py::buffer(buffer).request(true);
  if (info.ndim != 1 || info.itemsize != 1 || info.strides[0] != 1 ||
      static_cast<size_t>(info.size) < nbytes) {
    throw std::invalid_argument(
        "torch_item: allocate() must return a contiguous byte buffer of the size asked");
  }
  return static_cast<unsigned char*>(info.ptr);
}

}  // namespace

py::tuple torch_item(const std::shared_ptr<const Minibatch>& minibatch, PackingMode mode, SparseItem sparse,
                     size_t align, size_t header, const py::function& allocate,
                     const std::map<std::string, int64_t>& class_pads) {
  const ItemPlan item = plan_item(minibatch, mode, sparse, align, header, class_pads);
  py::object buffer = allocate(item.end);
  unsigned char* base = allocated(buffer, item.end);
  {
    py::gil_scoped_release release;
    write_item(item, base, class_pads);
  }
  return py::make_tuple(buffer, item_entries(item, 0));
}

py::tuple torch_items(const std::vector<std::shared_ptr<const Minibatch>>& minibatches, PackingMode mode,
                      SparseItem sparse, size_t align, size_t header, const py::function& allocate,
                      const std::map<std::string, int64_t>& class_pads) {
  std::vector<ItemPlan> items;
  std::vector<size_t> starts;
  size_t end = header;
  for (const auto& minibatch : minibatches) {
    items.push_back(plan_item(minibatch, mode, sparse, align, 0, class_pads));
    starts.push_back(end);
    end += items.back().end;  // a multiple of align: every item starts aligned
  }
  py::object buffer = allocate(end);
  unsigned char* base = allocated(buffer, end);
  {
    py::gil_scoped_release release;
    for (size_t i = 0; i < items.size(); ++i) write_item(items[i], base + starts[i], class_pads);
  }
  py::list entries;
  for (size_t i = 0; i < items.size(); ++i) entries.append(item_entries(items[i], starts[i]));
  return py::make_tuple(buffer, entries);
}

struct WrittenItems {
  std::vector<ItemPlan> items;  // their minibatches are dropped once written
  std::vector<size_t> starts;
  std::unique_ptr<unsigned char, decltype(&std::free)> buffer{nullptr, &std::free};
  size_t size = 0;
};

void WrittenItemsDeleter::operator()(WrittenItems* written) const {
  delete written;
}

WrittenItemsPtr write_torch_items(const std::vector<std::shared_ptr<const Minibatch>>& minibatches,
                                  PackingMode mode, SparseItem sparse, size_t align, size_t header,
                                  const std::map<std::string, int64_t>& class_pads) {
  WrittenItemsPtr written(new WrittenItems);
  size_t end = header;
  for (const auto& minibatch : minibatches) {
    written->items.push_back(plan_item(minibatch, mode, sparse, align, 0, class_pads));
    written->starts.push_back(end);
    end += written->items.back().end;
  }
  constexpr size_t kBufferAlign = 64;
  written->size = end;
  written->buffer.reset(static_cast<unsigned char*>(std::aligned_alloc(
      kBufferAlign, std::max<size_t>((end + kBufferAlign - 1) / kBufferAlign * kBufferAlign, kBufferAlign))));
  if (!written->buffer) throw std::bad_alloc();
  for (size_t i = 0; i < written->items.size(); ++i) {
    write_item(written->items[i], written->buffer.get() + written->starts[i], class_pads);
    written->items[i].minibatch.reset();
    written->items[i].streams.clear();
  }
  return written;
}

py::tuple written_items_to_python(WrittenItemsPtr written, const py::object& tensor_of) {
  unsigned char* data = written->buffer.get();
  py::capsule owner(data, [](void* p) { std::free(p); });
  (void)written->buffer.release();  // the capsule frees it now
  py::list items;
  if (tensor_of.is_none()) {
    for (size_t i = 0; i < written->items.size(); ++i) {
      items.append(item_entries(written->items[i], written->starts[i]));
    }
  } else {
    const py::dtype float32 = py::dtype::of<float>(), float64 = py::dtype::of<double>();
    const py::dtype int64 = py::dtype::of<int64_t>(), uint8 = py::dtype::of<uint8_t>();
    auto dtype_named = [&](const char* name) -> const py::dtype& {
      if (std::strcmp(name, "float32") == 0) return float32;
      if (std::strcmp(name, "float64") == 0) return float64;
      if (std::strcmp(name, "int64") == 0) return int64;
      return uint8;
    };
    for (size_t i = 0; i < written->items.size(); ++i) {
      py::dict item;
      for (const Planned& t : written->items[i].plan) {
        py::array array(dtype_named(t.dtype), t.shape, data + written->starts[i] + t.offset, owner);
        item[py::str(t.key)] = tensor_of(std::move(array));
      }
      items.append(std::move(item));
    }
  }
  py::array_t<uint8_t> buffer({static_cast<py::ssize_t>(written->size)}, {py::ssize_t{1}}, data, owner);
  return py::make_tuple(buffer, items);
}

py::dict stream_arrays(const std::shared_ptr<const Minibatch>& minibatch, size_t index, PackingMode mode) {
  const StreamBatch& batch = minibatch->streams.at(index);
  const Layout& layout = batch.layout;
  const std::vector<Placed> seqs = placed_sequences(layout);

  py::dict out;
  size_t samples = 0;
  size_t max_length = 0;
  std::vector<int64_t> lengths, offsets{0}, entries;
  for (const Placed& p : seqs) {
    samples += p.length();
    max_length = std::max(max_length, p.length());
    lengths.push_back(static_cast<int64_t>(p.length()));
    offsets.push_back(static_cast<int64_t>(samples));
    entries.insert(entries.end(), {static_cast<int64_t>(p.sequence_index), static_cast<int64_t>(p.row),
                                   static_cast<int64_t>(p.t_begin), static_cast<int64_t>(p.t_end)});
  }
  out["num_sequences"] = seqs.size();
  out["num_samples"] = samples;
  out["max_length"] = max_length;
  out["lengths"] = int64_vector(lengths);
  out["offsets"] = int64_vector(offsets);
  py::array_t<int64_t> layout_entries = int64_vector(entries);
  out["layout"] =
      py::make_tuple(layout.num_parallel, layout.num_time_steps,
                     layout_entries.reshape({static_cast<py::ssize_t>(seqs.size()), py::ssize_t{4}}));
  if (mode == PackingMode::kTruncated) {
    out["mask"] = packed_mask(layout, seqs);
  } else if (mode == PackingMode::kFrame) {
    auto mask = new_array<uint8_t>({static_cast<py::ssize_t>(samples), py::ssize_t{1}});
    std::fill(mask.mutable_data(), mask.mutable_data() + samples, uint8_t{2});
    out["mask"] = mask;
  } else {
    out["mask"] = sequence_mask(seqs, max_length);
  }

  bool zero_copy = false;
  if (batch.info.storage == StorageFormat::kSparseCsc) {
    sparse_arrays(minibatch, batch, seqs, out, zero_copy);
    out["dim"] = batch.info.sample_dim();
  } else {
    out["value"] = dense_value(minibatch, batch, seqs, mode, max_length, zero_copy);
  }
  out["zero_copy"] = zero_copy;
  return out;
}

}  // namespace cntkio::python
