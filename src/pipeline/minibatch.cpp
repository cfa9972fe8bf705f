#include "cntkio/minibatch.hpp"

#include <algorithm>
#include <string>

#include "cntkio/errors.hpp"

namespace cntkio {

namespace {

bool entries_equal(const Layout::Entry& a, const Layout::Entry& b) {
  if (a.is_gap != b.is_gap || a.row != b.row || a.t_begin != b.t_begin || a.t_end != b.t_end) return false;
  // A gap's sequence_index carries no meaning.
  return a.is_gap || a.sequence_index == b.sequence_index;
}

template <typename T>
T load(const unsigned char* p) {
  T v;
  std::copy(p, p + sizeof(T), reinterpret_cast<unsigned char*>(&v));
  return v;
}

double load_value(ElementType type, const unsigned char* p) {
  return type == ElementType::kFloat ? static_cast<double>(load<float>(p)) : load<double>(p);
}

}  // namespace

// Like CNTK, only gap entries mark gaps; a column no entry covers is not a gap.
bool Layout::is_gap(size_t s, size_t t) const {
  const auto time = static_cast<ptrdiff_t>(t);
  for (const Entry& e : entries) {
    if (e.is_gap && e.row == s && time >= e.t_begin && time < e.t_end) return true;
  }
  return false;
}

size_t Layout::num_sequences() const {
  return static_cast<size_t>(
      std::count_if(entries.begin(), entries.end(), [](const Entry& e) { return !e.is_gap; }));
}

size_t Layout::num_samples() const {
  const auto steps = static_cast<ptrdiff_t>(num_time_steps);
  size_t n = 0;
  for (const Entry& e : entries) {
    if (e.is_gap) continue;
    const ptrdiff_t b = std::max<ptrdiff_t>(e.t_begin, 0);
    const ptrdiff_t end = std::min(e.t_end, steps);
    if (end > b) n += static_cast<size_t>(end - b);
  }
  return n;
}

bool operator==(const Layout& a, const Layout& b) {
  return a.num_parallel == b.num_parallel && a.num_time_steps == b.num_time_steps &&
         std::equal(a.entries.begin(), a.entries.end(), b.entries.begin(), b.entries.end(), entries_equal);
}

double StreamBatch::value_at(size_t row, size_t column) const {
  const size_t dim = info.sample_dim();
  if (row >= dim || column >= layout.num_columns()) {
    throw UsageError("value_at(" + std::to_string(row) + ", " + std::to_string(column) +
                     ") is outside the minibatch of stream '" + info.name + "' (" + std::to_string(dim) +
                     " x " + std::to_string(layout.num_columns()) + ")");
  }
  const size_t esize = element_size(info.element_type);
  if (info.storage == StorageFormat::kDense) {
    const size_t offset = (column * dim + row) * esize;
    if (offset + esize > values.size()) throw UsageError("Stream '" + info.name + "' holds no value buffer");
    return load_value(info.element_type, values.data() + offset);
  }
  if (col_starts.size() != layout.num_columns() + 1) {
    throw UsageError("Stream '" + info.name + "' holds no sparse column starts");
  }
  // Duplicate row indices: the last one wins, as when CNTK converts CSC to dense.
  double result = 0;
  const auto begin = static_cast<size_t>(col_starts[column]);
  const auto end = static_cast<size_t>(col_starts[column + 1]);
  for (size_t k = begin; k < end; ++k) {
    if (static_cast<size_t>(row_indices[k]) == row)
      result = load_value(info.element_type, values.data() + k * esize);
  }
  return result;
}

}  // namespace cntkio
