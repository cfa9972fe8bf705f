"""PyTorch adapter: ``MinibatchDataset``, an IterableDataset of minibatches read by a cntkio MinibatchSource.

Each item is one minibatch, a dict of tensors per stream ``name``:

* dense, sequence mode: ``name`` float tensor ``[sequences, max_length, *shape]`` (zero padded),
  ``name + "_mask"`` uint8 ``[sequences, max_length]`` (2 = sequence start, 1 = data, 0 = padding) and
  ``name + "_lengths"`` int64 ``[sequences]``; frame mode: ``name`` ``[samples, *shape]``; truncated BPTT:
  ``[slots, truncation_length, *shape]`` plus the mask.
* sparse, ``sparse="indices"`` (default): ``name`` int64 ``[sequences, max_length, max_nnz]`` holding the
  non-zero indices of every sample (-1 pads), ``name + "_values"`` the matching values (0 pads), plus mask and
  lengths; for one-hot labels ``batch[name][..., 0]`` is the class index. ``sparse="dense"``: a dense tensor
  like a dense stream. ``sparse="csr"``: ``torch.sparse_csr_tensor`` ``[samples, dim]`` plus
  ``name + "_offsets"`` (sequence i = rows offsets[i]:offsets[i+1]); only with ``num_workers=0`` (PyTorch 1.13
  cannot pass CSR tensors between processes).

Work is split across DataLoader workers and torch.distributed ranks: the data is read as
``world_size × num_workers`` partitions and worker ``w`` of rank ``r`` reads partition ``r × num_workers + w``
(cntk.io's num_data_partitions / partition_index), so each sequence of an epoch is read exactly once across all
of them. Use ``DataLoader(dataset, batch_size=None, num_workers=N)`` (or ``MinibatchLoader``), since items
already are minibatches. ``minibatch_size`` is the number of samples of each item.

An epoch is one sweep over the data (or ``epoch_size`` samples): iteration ``k`` reads epoch k of the endless,
sweep-by-sweep re-randomized stream. Call ``set_epoch(k)`` before each epoch when the DataLoader starts new
worker processes per epoch (the default); in one process the epoch advances by itself.

``state_dict()`` / ``load_state_dict()`` checkpoint the position, backed by the reader's checkpoint: with
``MinibatchLoader`` (or ``num_workers=0``) the dataset sees the state after every minibatch handed to the
training loop; a state resumes with the same or a different number of workers or ranks.
"""

import json

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from . import _source

_STATE_KEY = "__cntkio_state__"


def _distributed():
    """(rank, world size) from torch.distributed when initialized, else from the launcher's environment."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    env = _source._core.worker_from_environment()
    return env["rank"], env["count"]


class MinibatchDataset(IterableDataset):
    """Minibatches of a cntkio MinibatchSource as an IterableDataset.

    Args:
        source: a function that returns a new ``cntkio.MinibatchSource`` (called once in every worker process,
            so it must be picklable: a module-level function or functools.partial), or the keyword arguments
            of ``cntkio.MinibatchSource`` as a dict.
        minibatch_size: samples per minibatch (per item).
        epoch_size: samples per epoch; None: one sweep.
        sparse: "indices" (default), "dense" or "csr" (see the module documentation).
        rank, world_size: this process's place among the distributed processes; default: torch.distributed
            if initialized, else the MPI/torchrun environment, else 0 of 1.
    """

    def __init__(self, source, minibatch_size, epoch_size=None, sparse="indices", rank=None, world_size=None):
        super().__init__()
        if sparse not in ("indices", "dense", "csr"):
            raise ValueError("sparse must be 'indices', 'dense' or 'csr', not %r" % (sparse,))
        self._source = source
        self.minibatch_size = _source._count(minibatch_size, "minibatch_size", allow_zero=False)
        self.epoch_size = None if epoch_size is None else _source._count(epoch_size, "epoch_size", False)
        self.sparse = sparse
        if (rank is None) != (world_size is None):
            raise ValueError("give both rank and world_size, or neither")
        self._rank, self._world_size = rank, world_size
        self.epoch = 0
        self.emit_state = False  # set by MinibatchLoader: items carry the reader state
        self._resume = None  # a state_dict to continue from
        self._seen = {}  # partition -> state json of the last item handed out (this epoch)
        self._seen_partitions = None

    # -- epochs and checkpoints

    def set_epoch(self, epoch):
        """Which epoch the next iteration reads (as DistributedSampler.set_epoch)."""
        self.epoch = _source._count(epoch, "epoch")
        self._seen = {}

    def state_dict(self):
        """Where the training loop stands: the epoch and the reader state of every partition that handed out
        minibatches in it (the others have not started)."""
        return {"epoch": self.epoch, "num_partitions": self._seen_partitions, "states": dict(self._seen)}

    def load_state_dict(self, state):
        """Continues from state_dict()'s output at the next iteration."""
        self.epoch = int(state["epoch"])
        self._seen = {int(p): s for p, s in state["states"].items()}
        self._seen_partitions = state["num_partitions"]
        self._resume = {"epoch": self.epoch, "num_partitions": state["num_partitions"], "states": dict(self._seen)}

    def record(self, item):
        """Takes the reader state out of an item of a dataset with ``emit_state`` (MinibatchLoader calls it)."""
        state = item.pop(_STATE_KEY, None)
        if state is not None:
            partition, partitions, epoch, json_state = state
            if epoch != self.epoch or partitions != self._seen_partitions:
                self.epoch, self._seen_partitions, self._seen = epoch, partitions, {}
            self._seen[partition] = json_state
        return item

    # -- iteration

    def _partition(self):
        if self._rank is None:
            rank, world = _distributed()
        else:
            rank, world = self._rank, self._world_size
        info = get_worker_info()
        workers, worker = (1, 0) if info is None else (info.num_workers, info.id)
        return rank * workers + worker, world * workers

    def _make_source(self):
        if callable(self._source):
            return self._source()
        return _source.MinibatchSource(**self._source)

    def _start_state(self, epoch, start, partition, partitions):
        """The state partition `partition` starts from: a checkpoint (own or merged) or the epoch start."""
        fresh = {"minibatchSourcePosition": start, "sequenceCounter": 0}
        resume = self._resume
        if resume is None or resume["epoch"] != epoch or not resume["states"]:
            return fresh
        if resume["num_partitions"] == partitions:
            return json.loads(resume["states"][partition]) if partition in resume["states"] else fresh
        old = resume["num_partitions"]
        states = []
        for p in range(old):
            if p in resume["states"]:
                states.append(json.loads(resume["states"][p]))
            else:
                states.append(dict(fresh, numWorkers=old, workerRank=p))
        return _source.merge_checkpoint_states(states)

    def __iter__(self):
        partition, partitions = self._partition()
        if self.sparse == "csr" and get_worker_info() is not None:
            raise ValueError("sparse='csr' works only with num_workers=0 (PyTorch cannot pass CSR tensors "
                             "between processes); use sparse='indices' or 'dense'")
        source = self._make_source()
        reader = source._reader
        epoch = self.epoch
        if self.epoch_size is None:
            # Epoch k starts at sample k·S; S (one sweep) costs a chunk read to learn, so epoch 0 skips it.
            size = reader.sweep_size() if epoch > 0 else 0
            source._max_samples, source._max_sweeps = _source.INFINITELY_REPEAT, epoch + 1
        else:
            size = self.epoch_size
            source._max_samples, source._max_sweeps = (epoch + 1) * size, _source.INFINITELY_REPEAT
        reader.set_v2_limits(source._max_samples, source._max_sweeps)
        source._mode = "v2"
        start = self._start_state(epoch, epoch * size, partition, partitions)
        if start != {"minibatchSourcePosition": 0, "sequenceCounter": 0}:  # restoring the start would reread it
            reader.restore(json.dumps(start))
        self._seen_partitions = partitions
        global_size = self.minibatch_size * partitions
        in_worker = get_worker_info() is not None
        while True:
            mb = source.next_minibatch(global_size, num_data_partitions=partitions, partition_index=partition)
            if not mb:
                break
            item = self._tensors(mb, _WorkerItem() if in_worker else {})
            state = reader.state()
            if self.emit_state:
                item[_STATE_KEY] = (partition, partitions, epoch, state)
            elif not in_worker:
                self._seen[partition] = state
            yield item
        if not in_worker or self.emit_state:
            # Next iteration in this process (or this persistent worker) reads the next epoch.
            self._resume = None
        self.epoch = epoch + 1
        self._seen = {}

    def _tensors(self, mb, out):
        for info, data in mb.items():
            name = info.name
            arrays = data._arrays
            frame = data._frame
            if not data.is_sparse:
                out[name] = torch.from_numpy(arrays["value"])
            elif self.sparse == "csr":
                out[name] = torch.sparse_csr_tensor(torch.from_numpy(arrays["indptr"].astype(np.int64)),
                                                    torch.from_numpy(arrays["indices"].astype(np.int64)),
                                                    torch.from_numpy(arrays["data"]),
                                                    size=(len(arrays["indptr"]) - 1, arrays["dim"]))
                out[name + "_offsets"] = torch.from_numpy(arrays["offsets"])
            elif self.sparse == "dense":
                out[name] = torch.from_numpy(_sparse_to_padded_dense(data, frame))
            else:
                indices, values = _sparse_to_padded_indices(data, frame)
                out[name] = torch.from_numpy(indices)
                out[name + "_values"] = torch.from_numpy(values)
            if not frame:
                out[name + "_mask"] = torch.from_numpy(arrays["mask"])
                out[name + "_lengths"] = torch.from_numpy(arrays["lengths"])
        return out


_ALIGN = 64  # bytes; every tensor of a packed item starts at a multiple of this in the shared buffer


class _WorkerItem(dict):
    """An item made in a DataLoader worker: a dict of tensors that pickles as ONE shared-memory buffer.

    PyTorch sends every tensor of an item through its own shared-memory segment, and (with the default
    ``file_descriptor`` sharing strategy) its own file-descriptor hand-over between the processes, which cost
    more than reading the data (bench/README.md, Python section). Packing the tensors of a minibatch into one
    segment makes that one hand-over per item. The training process unpickles a plain dict whose tensors are
    contiguous views into that segment (which lives as long as any of them)."""

    __slots__ = ()

    def __reduce__(self):
        entries = []
        total = 0
        for key, value in self.items():
            if isinstance(value, torch.Tensor) and value.layout == torch.strided and value.device.type == "cpu":
                nbytes = value.numel() * value.element_size()
                entries.append((key, value.dtype, tuple(value.shape), total, nbytes))
                total += -(-nbytes // _ALIGN) * _ALIGN
            else:
                entries.append((key, None, value, 0, 0))
        buffer = torch.empty(0, dtype=torch.uint8).set_(torch.UntypedStorage._new_shared(max(total, 1)))
        for key, dtype, shape, offset, nbytes in entries:
            if dtype is not None and nbytes:
                buffer[offset:offset + nbytes].view(dtype).view(shape).copy_(self[key])
        return _unpack_item, (buffer, entries)


def _unpack_item(buffer, entries):
    """A _WorkerItem in the receiving process: a dict of views into the shared buffer."""
    out = {}
    for key, dtype, shape, offset, nbytes in entries:
        if dtype is None:
            out[key] = shape  # the value itself
        elif nbytes:
            out[key] = buffer[offset:offset + nbytes].view(dtype).view(shape)
        else:
            out[key] = torch.empty(shape, dtype=dtype)
    return out


def _padded_rows(data, frame):
    """For every sample row of the sparse matrix, its (sequence, step) place in the padded array."""
    lengths = data._arrays["lengths"]
    if frame:
        return np.arange(int(lengths.sum())), None
    seq = np.repeat(np.arange(len(lengths)), lengths)
    step = np.arange(len(seq)) - np.repeat(data._arrays["offsets"][:-1], lengths)
    return seq, step


def _sparse_to_padded_dense(data, frame):
    a = data._arrays
    matrix = data.asarray()
    dense = np.asarray(matrix.toarray(), dtype=a["data"].dtype)
    if frame:
        return dense
    seq, step = _padded_rows(data, frame)
    out = np.zeros(a["mask"].shape + (a["dim"],), dtype=dense.dtype)
    out[seq, step] = dense
    return out


def _sparse_to_padded_indices(data, frame):
    a = data._arrays
    indptr = a["indptr"].astype(np.int64)
    counts = np.diff(indptr)
    width = max(1, int(counts.max()) if len(counts) else 1)
    rows = len(counts)
    flat_indices = np.full((rows, width), -1, dtype=np.int64)
    flat_values = np.zeros((rows, width), dtype=a["data"].dtype)
    row_of = np.repeat(np.arange(rows), counts)
    slot = np.arange(int(indptr[-1])) - np.repeat(indptr[:-1], counts)
    flat_indices[row_of, slot] = a["indices"]
    flat_values[row_of, slot] = a["data"]
    if frame:
        return flat_indices, flat_values
    seq, step = _padded_rows(data, frame)
    shape = a["mask"].shape + (width,)
    indices = np.full(shape, -1, dtype=np.int64)
    values = np.zeros(shape, dtype=flat_values.dtype)
    indices[seq, step] = flat_indices
    values[seq, step] = flat_values
    return indices, values


class MinibatchLoader(DataLoader):
    """A DataLoader for a MinibatchDataset (``batch_size=None``) that records the reader state of every item it
    hands out, so ``dataset.state_dict()`` in the training process is exact with worker processes too."""

    def __init__(self, dataset, num_workers=0, **kwargs):
        if not isinstance(dataset, MinibatchDataset):
            raise TypeError("MinibatchLoader needs a cntkio.torch.MinibatchDataset")
        dataset.emit_state = True
        super().__init__(dataset, batch_size=None, num_workers=num_workers, **kwargs)

    def __iter__(self):
        dataset = self.dataset
        for item in super().__iter__():
            yield dataset.record(item)
        if self.num_workers > 0 and not self.persistent_workers:
            # The worker processes advanced their copies; advance the training process's copy likewise.
            dataset.set_epoch(dataset.epoch + 1)
            dataset._resume = None
