#include "arrays.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

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

}  // namespace

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
