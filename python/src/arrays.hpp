// Conversion of one stream of a cntkio::Minibatch into NumPy arrays for the Python module.
//
// Shapes (python/cntkio/__init__.py documents them for users):
//   sequence mode   dense  [sequences, max_length, *shape], one row per sequence, padded with zeros
//   frame mode      dense  [samples, *shape]
//   truncated BPTT  dense  [slots, truncation_length, *shape] (CNTK's packed rows: a slot continues its
//                          sequence in the next minibatch)
//   sparse (every mode)    CSR arrays with one row per sample, samples in sequence order, plus sequence
//   offsets
// Arrays view the minibatch's own buffers where the layout allows (the array holds the buffer alive through a
// capsule); otherwise the values are gathered into a new array.
//
// Thread-safety: call with the GIL held.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cntkio/minibatch.hpp"

namespace cntkio::python {

/// How the source packs sequences; decides the dense array shape.
enum class PackingMode { kSequence, kFrame, kTruncated };

/// Dict for stream `index` of `minibatch`: num_sequences, num_samples, mask (uint8, 2 = sequence begin, 1 =
/// valid, 0 = padding), lengths, layout (num_parallel, num_time_steps, entries [n, 4]: sequence index, row,
/// t_begin, t_end), zero_copy, and either `value` (dense) or `data`/`indices`/`indptr`/`offsets`/`dim`
/// (sparse).
pybind11::dict stream_arrays(const std::shared_ptr<const Minibatch>& minibatch, size_t index,
                             PackingMode mode);

/// How torch_item hands out sparse streams (cntkio.torch.MinibatchDataset's `sparse`).
enum class SparseItem { kIndices, kDense };

/// Every tensor of a cntkio.torch item (python/cntkio/torch.py documents them) written into ONE buffer, for
/// sequence and frame packing: per stream `name` (dense padded values; sparse: padded indices, -1 pads,
/// and `name + "_values"`, or dense padded values) and, in sequence mode, `name + "_mask"` and
/// `name + "_lengths"`. `allocate(nbytes)` is called once and returns a writable, C-contiguous buffer of at
/// least nbytes; each tensor starts at a multiple of `align` from `header` on. Returns (buffer, entries),
/// entries being (key, dtype name, shape, byte offset, nbytes). Call with the GIL held; the copying runs
/// without it. `class_pads` (stream name -> padding value) names sparse one-hot streams to write as int64
/// class indices instead, padded with the value (no `name + "_values"`); a sample that is not one-hot (not
/// exactly one entry, of value 1) throws std::invalid_argument naming the stream, sequence key and step.
pybind11::tuple torch_item(const std::shared_ptr<const Minibatch>& minibatch, PackingMode mode,
                           SparseItem sparse, size_t align, size_t header, const pybind11::function& allocate,
                           const std::map<std::string, int64_t>& class_pads = {});

/// torch_item for several minibatches written into ONE buffer (one `allocate` call): the first item starts at
/// `header`, each later one at the end of the one before (a multiple of `align`). Returns (buffer, [entries
/// of each item]), offsets counted from the buffer's start.
pybind11::tuple torch_items(const std::vector<std::shared_ptr<const Minibatch>>& minibatches,
                            PackingMode mode, SparseItem sparse, size_t align, size_t header,
                            const pybind11::function& allocate,
                            const std::map<std::string, int64_t>& class_pads = {});

/// torch_items' writing, done without Python: the items of `minibatches` written into a buffer of its own
/// (aligned to 64 bytes), laid out as torch_items lays them out. Thread-safety: needs no GIL; any thread.
struct WrittenItems;
struct WrittenItemsDeleter {
  void operator()(WrittenItems* written) const;
};
using WrittenItemsPtr = std::unique_ptr<WrittenItems, WrittenItemsDeleter>;
WrittenItemsPtr write_torch_items(const std::vector<std::shared_ptr<const Minibatch>>& minibatches,
                                  PackingMode mode, SparseItem sparse, size_t align, size_t header,
                                  const std::map<std::string, int64_t>& class_pads);

/// torch_items' result for `written`: (buffer as a NumPy uint8 array that owns it, [entries of each item]);
/// with `tensor_of` (a function, not None) each item is instead a dict {key: tensor_of(NumPy array viewing
/// the buffer)}, in the order of its entries. Call with the GIL held.
pybind11::tuple written_items_to_python(WrittenItemsPtr written, const pybind11::object& tensor_of);

}  // namespace cntkio::python
