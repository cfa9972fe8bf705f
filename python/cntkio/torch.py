"""PyTorch adapter: ``MinibatchDataset``, an IterableDataset of minibatches read by a cntkio MinibatchSource.

Each item is one minibatch, a dict of tensors per stream ``name``:

* dense, sequence mode: ``name`` float tensor ``[sequences, max_length, *shape]`` (zero padded),
  ``name + "_mask"`` uint8 ``[sequences, max_length]`` (2 = sequence start, 1 = data, 0 = padding) and
  ``name + "_lengths"`` int64 ``[sequences]``; frame mode: ``name`` ``[samples, *shape]``; truncated BPTT:
  ``[slots, truncation_length, *shape]`` plus the mask.
* sparse, ``sparse="indices"`` (default): ``name`` int64 ``[sequences, max_length, max_nnz]`` holding the
  non-zero indices of every sample (-1 pads), ``name + "_values"`` the matching values (0 pads), plus mask and
  lengths; for one-hot labels ``batch[name][..., 0]`` is the class index. ``sparse="dense"``: a dense tensor
  like a dense stream (an index repeated within a sample keeps its last value, as CNTK's sparse-to-dense
  packing does). ``sparse="csr"``: ``torch.sparse_csr_tensor`` ``[samples, dim]`` plus
  ``name + "_offsets"`` (sequence i = rows offsets[i]:offsets[i+1]); only with ``num_workers=0`` (PyTorch 1.13
  cannot pass CSR tensors between processes). ``as_indices={name: padding}``: a one-hot stream as int64 class
  indices ``[sequences, max_length]`` (frame mode ``[samples]``), ``padding`` past each sequence's end.

Work is split across DataLoader workers and torch.distributed ranks: the data is read as
``world_size × num_workers`` partitions and worker ``w`` of rank ``r`` reads partition ``r × num_workers + w``
(cntk.io's num_data_partitions / partition_index), so each sequence of an epoch is read exactly once across all
of them. With ``worker_split="minibatches"`` (or ``"auto"`` on data of fewer chunks than workers) a rank's
workers instead all read the rank's stream and write every num_workers-th group of minibatches, which the
DataLoader hands out in turn: the training loop gets the minibatches of one process. Use
``DataLoader(dataset, batch_size=None, num_workers=N)`` (or ``MinibatchLoader``), since items already are
minibatches. ``minibatch_size`` is the number of samples of each item. ``MinibatchLoader``'s workers
send several minibatches per DataLoader item (up to 16, about 1 MiB, written into one segment) and the loader
hands them out one by one.

An epoch is one sweep over the data (or ``epoch_size`` samples): iteration ``k`` reads epoch k of the endless,
sweep-by-sweep re-randomized stream. Call ``set_epoch(k)`` before each epoch when the DataLoader starts new
worker processes per epoch (the default); in one process the epoch advances by itself.

``state_dict()`` / ``load_state_dict()`` checkpoint the position, backed by the reader's checkpoint: with
``MinibatchLoader`` (or ``num_workers=0``) the dataset sees the state after every minibatch handed to the
training loop; a state resumes with the same or a different number of workers or ranks (for another
partitioning, every rank's state: the union of the ranks' ``states``).

Tensors are contiguous and, apart from truncated BPTT and ``sparse="csr"``, written by the C++ module straight
into one buffer per item, each sequence copied once from where the reader loaded it (the reader's packer
does not lay the minibatch out in CNTK's layout first: ``defer_values``). In one process the reader writes the
next few items on a thread of its own while the training loop takes these. From worker processes that buffer
is a segment of shared memory that the training process mapped when the dataset (or ``MinibatchLoader``) was
made, before the DataLoader forked its workers: only the segment's place and where each tensor lies in it
cross between the processes. Each worker keeps up
to 8 segments of about an item's size in a slot of its own (16 slots of 64 MiB of address space; pages are
used as items fill them and stay mapped in the training process for the next epoch's workers), and reuses a
segment when every tensor of the item it held (and every view of them) is gone in the training process.
Keeping items longer is safe; it only makes the worker write new segments. Workers not forked by the process
that made the dataset (``multiprocessing_context="spawn"``) use segments of their own, sent once each.
No setting is needed; pin_memory off (the default) is right for CPU training. ``prefetch_factor=4``
(``MinibatchLoader``'s default) keeps the workers and the training loop busier than PyTorch's 2; on the
benchmark neither the reader's ``loaderThreads`` nor its ``prefetch`` per worker changed the throughput
(bench/README.md, ``python_throughput``).
"""

import fcntl
import json
import mmap
import os
import threading
import weakref

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from . import _source
from ._deserializers import _Deserializer
from ._user_deserializer import UserDeserializer
from ._user_source import UserMinibatchSource

_STATE_KEY = "__cntkio_state__"

#: MinibatchLoader's default prefetch_factor (items each worker has asked of it ahead; PyTorch's default is 2).
#: Each item is a whole minibatch written in a few hundred microseconds, so with 2 the training loop and the
#: workers often wait for each other's hand-over; 4 keeps them busy (bench/README.md, python_throughput).
PREFETCH_FACTOR = 4


def _distributed():
    """(rank, world size) from torch.distributed when initialized, else from the launcher's environment."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    env = _source._core.worker_from_environment()
    return env["rank"], env["count"]


class MinibatchDataset(IterableDataset):
    """Minibatches of a cntkio MinibatchSource as an IterableDataset.

    Args:
        source: what to read: deserializer objects (one or a list, read as ``cntkio.MinibatchSource(source)``
            with its defaults), the keyword arguments of ``cntkio.MinibatchSource`` as a dict, a
            ``cntkio._core.ReaderSpec``, or a function that returns a new ``cntkio.MinibatchSource`` or
            ``UserMinibatchSource`` (called in every worker process; with ``multiprocessing_context="spawn"``
            it must be picklable: a module-level function or functools.partial). Deserializers (UserDeserializer
            objects too) and dicts pickle as they are. A UserMinibatchSource is read through its
            ``next_minibatch(size, number_of_workers, worker_rank)``: each epoch reads on from where it stands,
            up to a minibatch that ends a sweep, or ``epoch_size`` samples.
        minibatch_size: samples per minibatch: with several partitions (ranks x workers) each reads its share
            of a global minibatch of minibatch_size x partitions samples, as CNTK's workers do, so an item
            holds minibatch_size samples on average (up to partitions x minibatch_size).
        epoch_size: samples per epoch; None: one sweep.
        sparse: "indices" (default), "dense" or "csr" (see the module documentation).
        rank, world_size: this process's place among the distributed processes; default: torch.distributed
            if initialized, else the MPI/torchrun environment, else 0 of 1.
        as_indices: {stream name: padding value} for sparse one-hot streams to deliver as class indices:
            ``name`` is then int64 ``[sequences, max_length]`` (frame mode: ``[samples]``) holding each sample's
            index, the padding value where the mask is 0, and there is no ``name + "_values"``. A sample that is
            not one-hot (no entry, several, or a value other than 1) raises ValueError naming the stream and the
            sequence key. Only with ``sparse="indices"``.
        share_index: create one source here, at once, and keep its index (CTF files with numeric sequence ids)
            for the sources of DataLoader workers forked from this process and of later epochs, which then do
            not scan the files again; the first iteration in this process reads with that source. Errors in
            the data's index or the configuration are raised here. False: every worker and epoch creates its
            own source and indexes the files itself.
        worker_split: how DataLoader workers share a rank's data. "chunks" (default, cntk.io's partitions): the
            rank's workers read partitions of their own (randomized partitions own whole chunks, so with fewer
            chunks than workers some get no data). "minibatches": every worker reads the rank's whole stream, as
            one process would, and writes every num_workers-th group of minibatches (MinibatchLoader's groups,
            a plain DataLoader's single items), which the DataLoader hands out in turn: the training loop gets
            exactly the minibatches of one process, and every worker converts, but each parses all the data.
            "auto": "minibatches" where the data has fewer chunks than workers, else "chunks".
    """

    def __init__(self, source, minibatch_size, epoch_size=None, sparse="indices", rank=None, world_size=None,
                 share_index=True, as_indices=None, worker_split="chunks"):
        super().__init__()
        if sparse not in ("indices", "dense", "csr"):
            raise ValueError("sparse must be 'indices', 'dense' or 'csr', not %r" % (sparse,))
        if worker_split not in ("auto", "chunks", "minibatches"):
            raise ValueError("worker_split must be 'auto', 'chunks' or 'minibatches', not %r" % (worker_split,))
        self.worker_split = worker_split
        self._source = _source_maker(source)
        self.as_indices = _check_as_indices(as_indices, sparse)
        self.minibatch_size = _source._count(minibatch_size, "minibatch_size", allow_zero=False)
        self.epoch_size = None if epoch_size is None else _source._count(epoch_size, "epoch_size", False)
        self.sparse = sparse
        if (rank is None) != (world_size is None):
            raise ValueError("give both rank and world_size, or neither")
        if world_size is not None:
            world_size = _source._count(world_size, "world_size", allow_zero=False)
            rank = _source._count(rank, "rank")
            if rank >= world_size:
                raise ValueError("rank %d is not below world_size %d" % (rank, world_size))
        self._rank, self._world_size = rank, world_size
        self.epoch = 0
        self.emit_state = False  # set by MinibatchLoader: items carry the reader state
        self._resume = None  # a state_dict to continue from
        self._seen = {}  # partition -> state json of the last item handed out (this epoch)
        self._seen_partitions = None
        self._probe = self._probe_pid = self._indexes = None
        self._kept = None  # (pid, source) whose epoch ended: the next iteration in that process reads on with it
        self._primed = None  # (source, epoch, partition, partitions) the kept source was set to and reads ahead
        self._sweep_size = None
        _ensure_arena()  # before the DataLoader forks its workers
        if share_index:
            self._probe, self._probe_pid = self._make_source(), os.getpid()
            if isinstance(self._probe, _source.MinibatchSource):
                self._indexes = self._probe._reader.hold_indexes()
            self._check_streams(self._probe)

    def __getstate__(self):
        # Spawned workers (not forked) cannot take a source or the index memory along: they index themselves.
        state = dict(self.__dict__)
        if state["_rank"] is None:
            # Nor can they ask torch.distributed (not initialized in them): the rank is the pickling process's.
            state["_rank"], state["_world_size"] = _distributed()
        state["_probe"] = state["_probe_pid"] = state["_indexes"] = state["_kept"] = state["_primed"] = None
        if isinstance(state["_source"], _core_spec_type()):
            raise TypeError("a MinibatchDataset over a ReaderSpec cannot be pickled (for spawned DataLoader "
                            "workers): give it the deserializer objects or a picklable function instead")
        return state

    def _check_streams(self, source):
        infos = {info.name: info for info in source.stream_infos()}
        for name in self.as_indices:
            if name not in infos:
                raise ValueError("as_indices names stream %r, which the source does not have (streams: %s)"
                                 % (name, ", ".join(infos)))
            if not infos[name].is_sparse:
                raise ValueError("as_indices names stream %r, which is dense (class indices come from sparse "
                                 "one-hot streams)" % name)

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

    def _places(self):
        """(rank, world size, DataLoader worker id, number of workers) of this process."""
        if self._rank is None:
            rank, world = _distributed()
        else:
            rank, world = self._rank, self._world_size
        info = get_worker_info()
        workers, worker = (1, 0) if info is None else (info.num_workers, info.id)
        return rank, world, worker, workers

    def _partition(self):
        rank, world, worker, workers = self._places()
        return rank * workers + worker, world * workers

    def _splits_minibatches(self, source, workers):
        """Whether this rank's `workers` DataLoader workers all read the rank's stream and take every
        workers-th group of minibatches (worker_split "minibatches"; "auto": when the data has fewer chunks
        than workers, as randomized partitions own whole chunks and some workers would get no data)."""
        if workers < 2 or not isinstance(source, _source.MinibatchSource) or self.worker_split == "chunks":
            return False
        return self.worker_split == "minibatches" or _chunk_count(source._reader) < workers

    def _make_source(self):
        if self._kept is not None and self._kept[0] == os.getpid():
            source, self._kept = self._kept[1], None
            return source
        if self._probe is not None and self._probe_pid == os.getpid() and get_worker_info() is None:
            source, self._probe = self._probe, None  # read once; later epochs take its index
            return source
        maker = self._source
        if isinstance(maker, dict):
            source = _source.MinibatchSource(**maker)
        elif isinstance(maker, list):
            source = _source.MinibatchSource(maker)
        elif isinstance(maker, _core_spec_type()):
            source = _source.MinibatchSource.__new__(_source.MinibatchSource)
            source._spec = maker
            source._setup(lambda: _source._core.Reader.from_spec(maker), _source.INFINITELY_REPEAT,
                          _source.INFINITELY_REPEAT, {})
        else:
            source = maker()
        if self.as_indices:
            self._check_streams(source)
        return source

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
        for items, states in self._groups(0):
            if states is None:
                yield from items
                continue
            for item, (partition, state) in zip(items, states):
                self._seen[partition] = state  # read in this process: the state of the item handed out
                yield item

    def _groups(self, group):
        """This process's minibatches as lists of items with, where the dataset itself records the reader
        state (no emit_state, no worker), the list of their (partition, state), else None. `group` > 0: in a
        worker of MinibatchLoader, lists of `group` minibatches at most (GROUP_BYTES, unless the workers split
        the minibatches, whose groups are exactly `group` long so that every worker knows where the others'
        groups lie); 0: any length."""
        rank, world, worker, workers = self._places()
        partition, partitions = rank * workers + worker, world * workers
        in_worker = get_worker_info() is not None
        if self.sparse == "csr" and in_worker:
            raise ValueError("sparse='csr' works only with num_workers=0 (PyTorch cannot pass CSR tensors "
                             "between processes); use sparse='indices' or 'dense'")
        source = self._make_source()
        if not isinstance(source, _source.MinibatchSource):
            for item in self._user_source_items(source, partition, partitions):
                yield [item], None
            return
        # Split by minibatches, every worker of the rank reads the rank's whole stream (as one process would),
        # writes the groups g with g % workers == worker and skips the others: the DataLoader takes items from
        # its workers in turn, so the training loop gets the minibatches in the order of one process.
        split = in_worker and self._splits_minibatches(source, workers)
        # A worker's group is written into one segment and handed over at once: about GROUP_BYTES, from the
        # streams' shapes (split: every worker must know where the others' groups lie) or from the last group.
        if split:
            partition, partitions = rank, world
            count = _split_group(source, self.minibatch_size, self.sparse, self.as_indices, group) if group else 1
        else:
            count = 1  # then as `limit` allows; a plain DataLoader's worker: one minibatch per segment
        # Calls read `limit` minibatches at most, about GROUP_BYTES (from the last call): several small ones per
        # buffer; large ones one at a time, as one buffer of many MB costs more to allocate than it saves.
        limit = 0 if split else group or (0 if in_worker else _READ_AHEAD)
        reader = source._reader
        epoch = self.epoch
        direct = source._packing != "truncated" and self.sparse != "csr"
        primed, self._primed = self._primed, None
        if (primed is None or primed[0] is not source or primed[1:] != (epoch, partition, partitions)
                or self._resume is not None or in_worker):
            self._begin_epoch(source, epoch, partition, partitions)
            # torch_item then copies each sequence from the loaded chunks straight into the item, instead of
            # the packer laying it out in CNTK's layout first (one pass over the values instead of two).
            if direct:
                reader.defer_values(_DEFER_VALUES)
        # else the last epoch's end set the reader to this epoch's start and began reading it
        self._seen_partitions = partitions
        global_size = self.minibatch_size * partitions
        pool = _worker_pool() if in_worker else None
        allocate = pool.allocate if pool is not None else _allocate
        record = not in_worker and not self.emit_state  # the dataset records the states itself
        with_state = self.emit_state or record
        index = 0  # of the group in the rank's stream (split by minibatches)
        while True:
            source._report_skips_if_due()
            others = (worker - index) % workers if split else 0  # groups of other workers before this one's next
            if others:
                wanted = count * others
                read, source._skips_due = reader.skip_v2(wanted, global_size, partitions, partition)
                if read < wanted:
                    source._report_skips()
                    break
                index += others
                continue
            index += 1
            if direct:  # the minibatches written into one buffer (one segment of a worker: one hand-over)
                if pool is None:
                    # The reader writes the next group on a thread of its own meanwhile (states are always
                    # wanted here) and makes the tensors itself unless Python reshapes them; `exhausted` says
                    # whether the data ended.
                    buffer, read, exhausted = reader.next_torch_items_ahead(
                        count, global_size, partitions, partition, self.sparse == "dense", _ALIGN, _ALIGN,
                        self.as_indices, None if source._shapes else torch.from_numpy)
                    if exhausted or (self.epoch_size is None and read and read[-1][2]):
                        # The epoch ends with this group (its sweep did): the reader starts on the next epoch
                        # while the loop takes this group, as the C++ reader reads on across sweeps.
                        self._read_next_epoch_ahead(source, epoch + 1, partition, partitions)
                        exhausted = True
                    wanted = len(read) + 1 if exhausted else len(read)
                    if source._shapes:
                        items = self._items(buffer, [entries for entries, _, _ in read], source, pool)
                    else:
                        items = [item for item, _, _ in read]
                else:
                    buffer, read = reader.next_torch_items(count, global_size, partitions, partition,
                                                           self.sparse == "dense", _ALIGN, _ALIGN, allocate,
                                                           self.as_indices, with_state)
                    wanted = count
                    items = self._items(buffer, [entries for entries, _, _ in read], source, pool)
                states = [state for _, state, _ in read]
                source._skips_due = any(end for _, _, end in read)
                if limit and read:
                    # bytes written: the end of the last tensor (in this process: the buffer's size)
                    written = len(buffer) if pool is None else max(offset + nbytes for _, _, _, offset, nbytes
                                                                   in read[-1][0])
                    count = max(1, min(limit, GROUP_BYTES * len(read) // max(written, 1)))
            else:
                items, states, wanted = [], [], group or count
                while len(items) < wanted:
                    if items:
                        source._report_skips_if_due()
                    batch = reader.next_v2(global_size, partitions, partition)
                    if batch is None:
                        break
                    source._skips_due = batch.end_of_sweep
                    items.append(self._packed_item(batch, source, in_worker))
                    batch = None  # frees the packed minibatch now (the item holds a copy)
                    states.append(reader.state() if with_state else None)
            if self.emit_state:
                for item, state in zip(items, states):
                    item[_STATE_KEY] = (partition, partitions, epoch, state)
            if items:
                if group and not split and not direct:
                    yield from _by_bytes(items, group)
                else:
                    yield items, [(partition, state) for state in states] if record else None
            if len(items) < wanted:
                source._report_skips()
                break
        self._kept = (os.getpid(), source)  # the next iteration here reads on with this source
        if not in_worker or self.emit_state:
            # Next iteration in this process (or this persistent worker) reads the next epoch.
            self._resume = None
        self.epoch = epoch + 1
        self._seen = {}

    def _read_next_epoch_ahead(self, source, epoch, partition, partitions):
        """Sets the reader of `source` (this process's, whose epoch has just ended) to where `epoch` starts and
        has it read that epoch's first minibatch on its thread. An iteration that does not begin that epoch
        (set_epoch, load_state_dict) sets the reader again, which drops what it read."""
        self._begin_epoch(source, epoch, partition, partitions)
        source._reader.torch_items_read_ahead(1, self.minibatch_size * partitions, partitions, partition,
                                              self.sparse == "dense", _ALIGN, _ALIGN, self.as_indices)
        self._primed = (source, epoch, partition, partitions)

    def _begin_epoch(self, source, epoch, partition, partitions):
        """Sets the reader of `source` to where `epoch` starts for `partition` (or to the state it resumes)."""
        reader = source._reader
        if self.epoch_size is None:
            # Epoch k starts at sample k·S (S: one sweep, known from the index; epoch 0 needs no S).
            if epoch > 0 and self._sweep_size is None:
                self._sweep_size = reader.sweep_size()
            size = self._sweep_size if epoch > 0 else 0
            source._max_samples, source._max_sweeps = _source.INFINITELY_REPEAT, epoch + 1
        else:
            size = self.epoch_size
            source._max_samples, source._max_sweeps = (epoch + 1) * size, _source.INFINITELY_REPEAT
        reader.set_v2_limits(source._max_samples, source._max_sweeps)
        source._mode = "v2"
        start = self._start_state(epoch, epoch * size, partition, partitions)
        if start != {"minibatchSourcePosition": 0, "sequenceCounter": 0}:  # restoring the start would reread it
            reader.restore(json.dumps(start))

    def _packed_item(self, batch, source, in_worker):
        """The item of a minibatch packed in CNTK's layout (truncated BPTT, sparse="csr")."""
        item = self._tensors(source._wrap(batch), _WorkerItem() if in_worker else {})
        if self.as_indices:
            arrays = {key: tensor.numpy() for key, tensor in item.items()}
            _class_indices(arrays, None, self.as_indices, batch)
            item.clear()
            item.update((key, torch.from_numpy(array)) for key, array in arrays.items())
        return item

    def _item(self, buffer, entries, source, pool):
        """The item of a minibatch written by the C++ module into `buffer` (torch_item) as `entries` say."""
        return self._items(buffer, [entries], source, pool)[0]

    def _items(self, buffer, entries_of_items, source, pool):
        """The items written by the C++ module into `buffer` (a NumPy array here, a shared-memory segment of
        `pool` in a DataLoader worker), one per list of entries."""
        if buffer is None:
            return []
        view = np.asarray(pool.lease(buffer)) if pool is not None else buffer  # views keep the lease alive
        shapes = source._shapes
        if shapes:
            entries_of_items = [
                [(key, dtype, shape[:-1] + tuple(shapes[key]), offset, nbytes)  # multi-dimensional samples
                 if key in shapes and key in source.streams and not source.streams[key].is_sparse
                 else (key, dtype, shape, offset, nbytes) for key, dtype, shape, offset, nbytes in entries]
                for entries in entries_of_items]
        from_numpy, dtypes = torch.from_numpy, _DTYPES  # an array made on the buffer is the cheapest view
        items = []
        for entries in entries_of_items:
            out = _WorkerItem() if pool is not None else {}
            for key, dtype, shape, offset, _ in entries:
                out[key] = from_numpy(np.ndarray(shape, dtypes[dtype], view, offset))
            items.append(out)
        if pool is not None:
            pool.prepare(items, entries_of_items, buffer)
        return items

    def _tensors(self, mb, out):
        """The item of a minibatch (MinibatchData of every stream) for truncated BPTT, sparse="csr" and user
        sources."""
        for info, data in mb.items():
            name = info.name
            arrays, frame = _arrays_of(data)
            if "value" in arrays:
                out[name] = torch.from_numpy(arrays["value"])
            elif self.sparse == "csr":
                out[name] = torch.sparse_csr_tensor(torch.from_numpy(arrays["indptr"].astype(np.int64)),
                                                    torch.from_numpy(arrays["indices"].astype(np.int64)),
                                                    torch.from_numpy(arrays["data"]),
                                                    size=(len(arrays["indptr"]) - 1, arrays["dim"]))
                out[name + "_offsets"] = torch.from_numpy(arrays["offsets"])
            elif self.sparse == "dense":
                out[name] = torch.from_numpy(_sparse_to_padded_dense(arrays, frame))
            else:
                indices, values = _sparse_to_padded_indices(arrays, frame)
                out[name] = torch.from_numpy(indices)
                out[name + "_values"] = torch.from_numpy(values)
            if not frame:
                out[name + "_mask"] = torch.from_numpy(arrays["mask"])
                out[name + "_lengths"] = torch.from_numpy(arrays["lengths"])
        return out

    def _user_source_items(self, source, partition, partitions):
        """The items of a UserMinibatchSource (or any object with its next_minibatch): read on from where it
        stands, one sweep (up to a minibatch whose data ends one) or epoch_size samples per epoch."""
        in_worker = get_worker_info() is not None
        epoch = self.epoch
        resume = self._resume
        if resume is not None and resume["epoch"] == epoch and partition in resume["states"]:
            if resume["num_partitions"] != partitions:
                raise ValueError("a UserMinibatchSource's state cannot be continued with another number of "
                                 "partitions (%d, was %d)" % (partitions, resume["num_partitions"]))
            source.restore_from_checkpoint(json.loads(resume["states"][partition]))
        self._seen_partitions = partitions
        read = 0
        while self.epoch_size is None or read < self.epoch_size:
            mb = source.next_minibatch(self.minibatch_size * partitions, partitions, partition)
            if not mb:
                break
            samples = max((d.num_samples for d in mb.values()), default=0)
            if samples == 0:  # this partition's share of the minibatch is empty: no item (as the reader's path)
                if not in_worker and not self.emit_state:
                    self._seen[partition] = json.dumps(source.get_checkpoint_state())
                if self.epoch_size is None and any(d.end_of_sweep for d in mb.values()):
                    break
                continue
            item = self._tensors(mb, _WorkerItem() if in_worker else {})
            if self.as_indices:
                arrays = {key: tensor.numpy() for key, tensor in item.items()}
                _class_indices(arrays, None, self.as_indices, _NoKeys())
                item.clear()
                item.update((key, torch.from_numpy(array)) for key, array in arrays.items())
            state = json.dumps(source.get_checkpoint_state())
            if self.emit_state:
                item[_STATE_KEY] = (partition, partitions, epoch, state)
            elif not in_worker:
                self._seen[partition] = state
            yield item
            read += samples
            if self.epoch_size is None and any(d.end_of_sweep for d in mb.values()):
                break
        self._kept = (os.getpid(), source)
        if not in_worker or self.emit_state:
            self._resume = None
        self.epoch = epoch + 1
        self._seen = {}


class _Positions:
    """The keys of a user source's minibatch in messages: its sequences have positions only."""

    def __getitem__(self, i):
        return "#%d of the minibatch" % i


class _NoKeys:
    keys = _Positions()


def _core_spec_type():
    return _source._core.ReaderSpec


def _source_maker(source):
    """What MinibatchDataset keeps to make sources: a function, a dict of MinibatchSource arguments, a list
    of deserializers or a ReaderSpec."""
    if isinstance(source, (_Deserializer, UserDeserializer)):
        return [source]
    if isinstance(source, (list, tuple)):
        if not source or not all(isinstance(d, (_Deserializer, UserDeserializer)) for d in source):
            raise TypeError("MinibatchDataset takes a list of cntkio deserializer objects, not %r" % (source,))
        return list(source)
    if isinstance(source, (dict, _core_spec_type())) or callable(source):
        return source
    if isinstance(source, (_source.MinibatchSource, UserMinibatchSource)):
        raise TypeError("MinibatchDataset makes its own sources (one per worker process): give it the "
                        "deserializers, the MinibatchSource arguments as a dict, or a function that makes one "
                        "(a UserMinibatchSource too)")
    raise TypeError("MinibatchDataset needs deserializer objects, a dict of MinibatchSource arguments, a "
                    "ReaderSpec or a function returning a MinibatchSource, not %r" % (source,))


def _check_as_indices(as_indices, sparse):
    if not as_indices:
        return {}
    if not isinstance(as_indices, dict):
        raise TypeError("as_indices must be a dict {stream name: padding value}, not %r" % (as_indices,))
    if sparse != "indices":
        raise ValueError("as_indices needs sparse='indices', not %r" % (sparse,))
    for name, pad in as_indices.items():
        if not isinstance(name, str):
            raise TypeError("as_indices keys must be stream names, not %r" % (name,))
        if isinstance(pad, bool) or not isinstance(pad, (int, np.integer)):
            raise TypeError("the padding value of as_indices[%r] must be an int, not %r" % (name, pad))
    return {name: int(pad) for name, pad in as_indices.items()}


def _class_indices(arrays, entries, as_indices, batch):
    """Replaces the padded indices and values of the one-hot streams `as_indices` names by their class indices
    (a view of the same memory), in `arrays` (name -> NumPy array) and in their `entries` (None: there are
    none); returns the entries."""
    for name, pad in as_indices.items():
        indices, values = arrays[name], arrays.pop(name + "_values")
        mask = arrays.get(name + "_mask")  # none in frame mode: every row is a sample
        samples = indices.shape[0] if mask is None else np.count_nonzero(mask)
        ones = values[..., 0] == 1
        # Padding holds value 0, so `samples` ones mean that every sample has a 1 in its first entry (whose index
        # is then >= 0); a single entry per sample is the rest of one-hot.
        if indices.shape[-1] != 1 or np.count_nonzero(ones) != samples:
            _not_one_hot(name, indices, values, mask, batch)
        classes = indices.reshape(indices.shape[:-1])
        if mask is not None and pad != -1:
            np.putmask(classes, ~ones, pad)
        arrays[name] = classes
    if entries is not None:
        values = {name + "_values" for name in as_indices}
        entries = [(key, dtype, shape[:-1] if key in as_indices else shape, offset, nbytes)
                   for key, dtype, shape, offset, nbytes in entries if key not in values]
    return entries


def _not_one_hot(name, indices, values, mask, batch):
    bad = (indices[..., 0] < 0) | (values[..., 0] != 1)
    if indices.shape[-1] > 1:
        bad |= indices[..., 1] >= 0
    if mask is not None:
        bad &= mask != 0
    where = np.argwhere(bad)[0].tolist()
    step = "" if mask is None else " at step %d" % where[1]
    raise ValueError("cntkio.torch: as_indices: sample%s of sequence %r in stream %r is not one-hot (one index "
                     "with value 1)" % (step, batch.keys[where[0]], name))


# -- sending items from DataLoader workers
#
# PyTorch hands every tensor of an item over in a new shared-memory segment, with a file-descriptor transfer
# between the processes for each, and the fresh pages fault in on both sides: per minibatch that cost more
# than reading the data (bench/README.md, "python_throughput"). A worker therefore writes all tensors of an
# item into one segment of its own pool and sends only where the segment is and where the tensors lie in it;
# the segment is reused when the training process has dropped every tensor of the item it carried. Byte 0 of
# a segment says whether it is free (0) or in use (1): the worker sets it before sending, the training
# process clears it when the item's last tensor dies.
#
# The segments lie in the arena: shared memory the training process maps before it forks its workers (when
# a MinibatchDataset or MinibatchLoader is made), so nothing but offsets crosses between the processes, and
# the pages stay mapped from one epoch's workers to the next. A forked worker claims one slot of the arena
# with a POSIX record lock on it, which the kernel drops when the process ends, so no two live workers (of
# one DataLoader or of several) share a slot. The slot's first page lists its segments, so the next worker
# in it (the next epoch's) reuses them and leaves alone those the training process still holds. Workers
# that find no arena (spawned ones, or a DataLoader iterated in another process than the one that made the
# dataset), no free slot or no room in theirs use segments of their own, sent once each (their file
# descriptor, through PyTorch).

_DEFER_VALUES = True  # tests switch it off to compare with items made from packed minibatches
_ALIGN = 64  # bytes; the header and every tensor of an item start at a multiple of this in a buffer
_MAX_SEGMENTS = 8  # free or in-use segments a worker keeps; more only while the training loop holds items
_GROUP_ITEMS = 16  # minibatches a worker sends in one item at most (MinibatchLoader)
_READ_AHEAD = 8  # minibatches read and written per call of the C++ module in the training process
GROUP_BYTES = 1 << 20  # MinibatchLoader's workers send minibatches together until they hold this many bytes
_ARENA_SLOTS = 16  # workers (of all DataLoaders at once) that write into the arena
_ARENA_SLOT_BYTES = 64 << 20  # address space per slot; pages are used only as items fill them
_ARENA_HEADER = 4096  # a slot's segment table: int64 count, then (offset, size) pairs within the slot
_NUMPY_DTYPES = {torch.float32: np.float32, torch.float64: np.float64, torch.int64: np.int64,
                 torch.int32: np.int32, torch.uint8: np.uint8, torch.bool: np.bool_}
_NUMPY_NAMES = {t: np.dtype(n).name for t, n in _NUMPY_DTYPES.items()}  # what item entries carry
_DTYPES = {np.dtype(n).name: np.dtype(n) for n in _NUMPY_DTYPES.values()}  # entry dtype name -> NumPy dtype


def _round_up(n, to):
    return -(-n // to) * to


def _allocate(nbytes):
    return np.empty(nbytes, dtype=np.uint8)


class _Arena:
    """Shared memory of the training process for its forked workers' items (see above)."""

    def __init__(self):
        self.pid = os.getpid()
        self.token = int.from_bytes(os.urandom(8), "little")
        self.fd = os.memfd_create("cntkio-items", os.MFD_CLOEXEC)  # forked workers keep it: they never exec
        try:
            os.ftruncate(self.fd, _ARENA_SLOTS * _ARENA_SLOT_BYTES)
            self.map = mmap.mmap(self.fd, _ARENA_SLOTS * _ARENA_SLOT_BYTES, flags=mmap.MAP_SHARED)
        except BaseException:
            os.close(self.fd)
            raise
        self.array = np.frombuffer(self.map, dtype=np.uint8)

    def claim_slot(self, preferred):
        """A slot index this process now holds (until it ends), trying `preferred` first; None if all are
        held."""
        for i in [preferred] + [k for k in range(_ARENA_SLOTS) if k != preferred]:
            try:
                fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, i)
                return i
            except OSError:
                continue
        return None


_arena = None  # this process's _Arena, or the one of the process that forked it


def _release_free_heap_before_fork():
    # A forked worker's allocations would otherwise reuse the free blocks of the heap it inherited, and each of
    # those pages is copied from the parent's on its first write (copy on write); a trimmed heap gives the
    # worker fresh pages. On the benchmark: the workers' kernel time -12 to -28 %, DataLoader wall -3 to -10 %
    # (bench/README.md, python_throughput). It costs the parent well under a millisecond per fork.
    _source._core.release_free_heap()


_fork_hook_registered = False  # inherited by forked children, which therefore do not register it again


def _ensure_arena():
    """Makes the arena of this process (once) so that DataLoader workers forked later share it, and has every
    later fork of this process start from a trimmed C heap."""
    global _arena, _fork_hook_registered
    if not _fork_hook_registered:
        os.register_at_fork(before=_release_free_heap_before_fork)
        _fork_hook_registered = True
    if _arena is not None and _arena.pid == os.getpid():
        return
    try:
        _arena = _Arena()
    except (OSError, AttributeError, ValueError):  # no memfd or no room for the mapping: segments of their own
        _arena = None


class _Segment:
    """One shared-memory segment of a worker's pool: in the arena (`offset` there) or a shared storage of its
    own. Free for the next item when the training process has released it (byte 0 is 0) and this process no
    longer uses the tensors written into it."""

    __slots__ = ("id", "tensor", "array", "address", "offset", "local_use", "handed", "sent", "several")

    def __init__(self, segment_id, size, offset=None):
        self.id = segment_id
        self.offset = offset
        if offset is None:
            self.tensor = torch.empty(0, dtype=torch.uint8).set_(torch.UntypedStorage._new_shared(size))
            self.array = self.tensor.numpy()
        else:
            self.array = _arena.array[offset:offset + size]
            self.tensor = torch.from_numpy(self.array)
        self.address = self.array.ctypes.data
        self.local_use = False  # tensors of this process view it
        self.handed = False  # pickled for the training process since it was last taken
        self.sent = offset is not None  # the training process has the segment (its own, by file descriptor)
        self.several = False  # holds several items (prepare())

    def free(self):
        return not self.local_use and self.array[0] == 0


class _SegmentPool:
    """The shared-memory segments one worker process writes items into."""

    def __init__(self):
        self.pid = os.getpid()
        self.token = (self.pid, int.from_bytes(os.urandom(8), "little"))  # names this pool in the trainer
        self.segments = []  # oldest first
        self.next_id = 0
        self.retired = []  # ids the training process may forget
        self.lock = threading.Lock()  # the worker's main thread and its queue's feeder thread both use it
        self.prepared = {}  # id of an item's first tensor -> what prepare() recorded
        self.last_taken = None
        self.slot = self.table = None
        self.max_segments = _MAX_SEGMENTS  # more when items carry several minibatches
        self.cursor = 0  # where take() looks for a free segment first: after the one it took last
        info = get_worker_info()
        if _arena is not None and _arena.pid == os.getppid() and info is not None:  # forked by the trainer
            self.slot = _arena.claim_slot(info.id % _ARENA_SLOTS)
        if self.slot is not None:
            start = self.slot * _ARENA_SLOT_BYTES
            self.table = _arena.array[start:start + _ARENA_HEADER].view(np.int64)
            for k in range(int(self.table[0])):  # left by the slot's earlier workers
                self.segments.append(self._arena_segment(int(self.table[1 + 2 * k]), int(self.table[2 + 2 * k])))

    def _arena_segment(self, offset, size):
        segment = _Segment(self.next_id, size, self.slot * _ARENA_SLOT_BYTES + offset)
        self.next_id += 1
        return segment

    def _new_in_arena(self, size):
        """A new segment in this worker's arena slot, or None when it has no room (the slot's segments are
        then all dropped if the training process holds none of them)."""
        if self.slot is None or size > (_ARENA_SLOT_BYTES - _ARENA_HEADER) // 4:
            return None
        base = self.slot * _ARENA_SLOT_BYTES
        mine = [s for s in self.segments if s.offset is not None]
        end = max((s.offset - base + s.array.size for s in mine), default=_ARENA_HEADER)
        if len(mine) >= self.max_segments or end + size > _ARENA_SLOT_BYTES:
            if not all(s.free() for s in mine):
                return None
            for s in mine:
                self._retire(s)
            mine, end = [], _ARENA_HEADER
        segment = self._arena_segment(end, size)
        self.segments.append(segment)
        mine.append(segment)
        for k, s in enumerate(mine):
            self.table[1 + 2 * k] = s.offset - base
            self.table[2 + 2 * k] = s.array.size
        self.table[0] = len(mine)
        return segment

    def take(self, nbytes):
        """A free segment of at least nbytes, marked in use by both processes."""
        with self.lock:
            # Items come back in the order they were sent: the segment after the last one taken is the likeliest
            # to be free, so the search costs the same however many segments there are.
            count = len(self.segments)
            segment = None
            for k in range(count):
                s = self.segments[(self.cursor + k) % count]
                if s.free() and s.array.size >= nbytes:
                    segment = s
                    self.cursor = (self.cursor + k + 1) % count
                    break
            if segment is None:
                size = _round_up(nbytes + nbytes // 8, 1 << 16)
                segment = self._new_in_arena(size)
            if segment is None:
                own = [s for s in self.segments if s.offset is None]
                too_small = next((s for s in own if s.free()), None)
                if too_small is not None:  # make room for a bigger one
                    self._retire(too_small)
                elif len(own) >= self.max_segments:  # all in use: forget the oldest the training loop received
                    # One not yet pickled (its item waits in the worker's queue) must stay: its id, sent as
                    # retired first, would make the training process drop it before the item arrives.
                    received = next((s for s in own if s.handed), None)
                    if received is not None:
                        self._retire(received)
                segment = _Segment(self.next_id, size)
                self.next_id += 1
                self.segments.append(segment)
            segment.array[0] = 1
            segment.local_use = True
            segment.handed = False
            segment.several = False
            self.last_taken = segment
            return segment

    def _retire(self, segment):
        self.segments.remove(segment)
        if segment.offset is None:
            self.retired.append(segment.id)

    def allocate(self, nbytes):
        """torch_item's allocate: the byte array of a free segment (see lease())."""
        return self.take(nbytes).array

    def prepare(self, items, entries_of_items, array):
        """Remembers how items written by torch_items into the segment of `array` pickle (their entries), so
        that pickling them needs no look at their tensors beyond checking they are the ones written. Items that
        share a segment are sent together (a _WorkerGroup) or copied."""
        segment = self._segment_of(array)
        segment.several = len(items) > 1
        if items and items[0]:
            refs = [[weakref.ref(t) for t in item.values()] for item in items]
            self.prepared[id(next(iter(items[0].values())))] = (refs, entries_of_items, segment)
            while len(self.prepared) > self.max_segments:  # items never pickled (a wrapper dropped them)
                del self.prepared[next(iter(self.prepared))]

    def prepared_payload(self, items):
        """(segment, entries of each item) of items prepare() saw together, if they still hold exactly those
        tensors, unchanged in shape and layout (plus values that are not tensors); else None."""
        first = next(iter(items[0].values()), None) if items else None
        record = self.prepared.pop(id(first), None) if first is not None else None
        if record is None:
            return None
        refs_of_items, entries_of_items, segment = record
        if len(items) != len(refs_of_items):
            return None
        payload = []
        for item, refs, entries in zip(items, refs_of_items, entries_of_items):
            if len(item) < len(refs):
                return None
            out = []
            for (key, value), ref, entry in zip(item.items(), refs, entries):
                if ref() is not value or key != entry[0] or value.shape != entry[2] or not value.is_contiguous():
                    return None
                out.append(entry)
            for key, value in list(item.items())[len(refs):]:
                if isinstance(value, torch.Tensor):
                    return None
                out.append((key, None, value, 0, 0))
            payload.append(out)
        return segment, payload

    def _segment_of(self, array):
        segment = self.last_taken
        if segment is None or segment.array is not array:  # several items were written in one call
            segment = next(s for s in self.segments if s.array is array)
        return segment

    def lease(self, array):
        """Base object for the tensors viewing `array` (a segment's): when they are all gone, this process no
        longer uses the segment."""
        segment = self._segment_of(array)
        lease = _Lease(array)
        weakref.finalize(lease, _end_local_use, segment)
        return lease

    def find(self, tensors):
        """The segment that holds every tensor of `tensors` (contiguous), and their offsets in it, or None."""
        if not tensors:
            return None
        first = tensors[0].data_ptr()
        segment = next((s for s in self.segments if s.address <= first < s.address + s.array.size), None)
        if segment is None or segment.handed or segment.several:  # several items: released together only
            return None
        offsets = []
        for t in tensors:
            start = t.data_ptr() - segment.address
            if not t.is_contiguous() or start < _ALIGN or start + t.numel() * t.element_size() > segment.array.size:
                return None
            offsets.append(start)
        return segment, offsets

    def hand_over(self, segment):
        """(segment tensor or None, retired ids) to pickle with an item in `segment`."""
        with self.lock:
            segment.handed = True
            new = not segment.sent
            segment.sent = True
            retired, self.retired = self.retired, []
        if segment.offset is not None:
            return (_arena.token, segment.offset, segment.array.size), retired
        return (segment.tensor if new else None), retired


def _end_local_use(segment):
    segment.local_use = False
    if not segment.handed:  # never sent: the training process will not release it
        segment.array[0] = 0


_pool = None  # this worker process's _SegmentPool


def _worker_pool():
    global _pool
    if _pool is None or _pool.pid != os.getpid():
        _pool = _SegmentPool()
    return _pool


class _WorkerGroup(list):
    """Several items of a DataLoader worker sent as one (MinibatchLoader unpacks them): the DataLoader's hand-over
    between the processes costs about 0.3 ms of CPU per item, more than making a small minibatch."""

    __slots__ = ()

    def __reduce__(self):
        pool = _worker_pool()
        prepared = pool.prepared_payload(self)
        if prepared is not None:  # written together into one segment: sent and released together
            segment, entries_of_items = prepared
            new, retired = pool.hand_over(segment)
            return _unpack_segment, (pool.token, segment.id, new, retired, entries_of_items)
        return _unpack_group, ([item._payload() for item in self],)


class _Minibatches(list):
    """A _WorkerGroup in the training process: the items, in order."""

    __slots__ = ()


def _unpack_group(payloads):
    return _Minibatches(_unpack_item(*payload) for payload in payloads)


class _WorkerItem(dict):
    """An item made in a DataLoader worker: a dict of tensors that pickles as one segment of the worker's pool.
    Items written by the C++ module already lie in a segment and are sent by reference; others (truncated
    BPTT) are copied into one first."""

    __slots__ = ()

    def __reduce__(self):
        return _unpack_item, self._payload()

    def _payload(self):
        pool = _worker_pool()
        prepared = pool.prepared_payload([self])
        if prepared is not None:
            segment, (entries,) = prepared
            new, retired = pool.hand_over(segment)
            return pool.token, segment.id, new, retired, entries
        tensors = [(k, v) for k, v in self.items() if isinstance(v, torch.Tensor) and v.layout == torch.strided
                   and v.device.type == "cpu" and v.dtype in _NUMPY_DTYPES]
        found = pool.find([v for _, v in tensors])
        if found is not None:
            segment, offsets = found
            places = {k: offset for (k, _), offset in zip(tensors, offsets)}
        else:
            places, end = {}, _ALIGN  # after the header
            for k, v in tensors:
                places[k] = end
                end += _round_up(v.numel() * v.element_size(), _ALIGN)
            segment = pool.take(end)
            for k, v in tensors:
                nbytes = v.numel() * v.element_size()
                if nbytes:
                    segment.tensor[places[k]:places[k] + nbytes].view(v.dtype).view(v.shape).copy_(v)
            segment.local_use = False
        entries = []
        for key, value in self.items():
            if key in places:
                entries.append((key, _NUMPY_NAMES[value.dtype], tuple(value.shape), places[key],
                                value.numel() * value.element_size()))
            else:
                entries.append((key, None, value, 0, 0))
        new, retired = pool.hand_over(segment)
        return pool.token, segment.id, new, retired, entries


_segments = {}  # in the training process: (pool token, segment id) -> NumPy uint8 view of the segment


class _Lease:
    """Base object of the arrays viewing one item in a segment: their life is its life."""

    __slots__ = ("__array_interface__", "_segment", "__weakref__")

    def __init__(self, segment):
        self._segment = segment
        self.__array_interface__ = segment.__array_interface__


def _release(segment):
    segment[0] = 0


def _forget_exited_workers(token):
    """Drops the segments of pools whose process has exited (called when a new pool shows up)."""
    for pid in {t[0] for t, _ in _segments} - {token[0]}:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            for key in [k for k in _segments if k[0][0] == pid]:
                del _segments[key]
        except PermissionError:
            pass


def _unpack_item(token, segment_id, segment, retired, entries):
    """A _WorkerItem in the receiving process: a dict of tensors viewing the segment, which is released to
    the worker when all of them (and every view of them) are gone."""
    return _unpack_segment(token, segment_id, segment, retired, [entries])[0]


def _unpack_segment(token, segment_id, segment, retired, entries_of_items):
    """The items a worker wrote into one segment, in the receiving process: dicts of tensors viewing the
    segment, which is released to the worker when all of them (and every view of them) are gone."""
    for r in retired:
        _segments.pop((token, r), None)
    if isinstance(segment, tuple):  # (arena token, offset, size): a segment in this process's arena
        arena_token, offset, size = segment
        if _arena is None or _arena.token != arena_token:
            raise RuntimeError("cntkio.torch: a minibatch refers to the shared-memory arena of another process "
                               "than this one; such items can only be unpickled where their workers' arena is")
        array = _arena.array[offset:offset + size]
    else:
        if segment is not None:
            if not any(t == token for t, _ in _segments):
                _forget_exited_workers(token)
            _segments[(token, segment_id)] = segment.numpy()
        try:
            array = _segments[(token, segment_id)]
        except KeyError:
            raise RuntimeError("cntkio.torch: a minibatch refers to shared-memory segment %d of worker process "
                               "%d, which this process never received" % (segment_id, token[0])) from None
    lease = _Lease(array)
    weakref.finalize(lease, _release, array)
    view = np.asarray(lease)  # every array made on it keeps `lease` alive
    from_numpy, dtypes = torch.from_numpy, _DTYPES
    items = _Minibatches()
    for entries in entries_of_items:
        out = {}
        for key, dtype, shape, offset, nbytes in entries:
            if dtype is None:
                out[key] = shape  # the value itself
            else:
                out[key] = from_numpy(np.ndarray(shape, dtypes[dtype], view, offset))
        items.append(out)
    return items


def _padded_rows(a, frame):
    """For every sample row of the sparse matrix, its (sequence, step) place in the padded array."""
    lengths = a["lengths"]
    if frame:
        return np.arange(int(lengths.sum())), None
    seq = np.repeat(np.arange(len(lengths)), lengths)
    step = np.arange(len(seq)) - np.repeat(a["offsets"][:-1], lengths)
    return seq, step


def _sparse_to_padded_dense(a, frame):
    import scipy.sparse

    matrix = scipy.sparse.csr_matrix((a["data"], a["indices"], a["indptr"]), shape=(len(a["indptr"]) - 1, a["dim"]))
    dense = np.asarray(matrix.toarray(), dtype=a["data"].dtype)
    if frame:
        return dense
    seq, step = _padded_rows(a, frame)
    out = np.zeros(a["mask"].shape + (a["dim"],), dtype=dense.dtype)
    out[seq, step] = dense
    return out


def _sparse_to_padded_indices(a, frame):
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
    seq, step = _padded_rows(a, frame)
    shape = a["mask"].shape + (width,)
    indices = np.full(shape, -1, dtype=np.int64)
    values = np.zeros(shape, dtype=flat_values.dtype)
    indices[seq, step] = flat_indices
    values[seq, step] = flat_values
    return indices, values


def _arrays_of(data):
    """(arrays, frame) of a MinibatchData: the reader's arrays, or those of a user source's Value (public API).
    A Value without a sequence axis (no mask) is read as frames."""
    if data._arrays is not None:
        return data._arrays, data._frame
    value = data.data
    if value.is_sparse:
        matrix = value.asarray().tocsr()
        arrays = {"data": matrix.data, "indices": matrix.indices, "indptr": matrix.indptr, "dim": matrix.shape[1]}
    else:
        arrays = {"value": np.ascontiguousarray(value.asarray())}
    mask = value.mask
    arrays.update(lengths=np.asarray(value.lengths, np.int64), offsets=np.asarray(value.offsets, np.int64))
    if mask is None:
        return arrays, True
    arrays["mask"] = np.asarray(mask)
    return arrays, False


def _as_is(item):
    return item


def _by_bytes(items, limit):
    """`items` cut into lists of up to GROUP_BYTES of tensors (the last item of each list crosses it) and `limit`
    items, as _groups yields them."""
    group, size = [], 0
    for item in items:
        group.append(item)
        size += sum(t.numel() * t.element_size() for t in item.values() if isinstance(t, torch.Tensor))
        if size >= GROUP_BYTES or len(group) >= limit:
            yield group, None
            group, size = [], 0
    if group:
        yield group, None


def _split_group(source, minibatch_size, sparse, as_indices, limit):
    """Minibatches per group of workers that split minibatches: about GROUP_BYTES from the streams' shapes
    (sparse streams counted at one entry per sample), at most `limit`; the same in every worker."""
    per_sample = 0
    for info in source.stream_infos():
        size = np.dtype(info.dtype).itemsize
        if not info.is_sparse or sparse == "dense":
            per_sample += int(np.prod(info.shape)) * size
        elif info.name in as_indices:
            per_sample += 8
        else:
            per_sample += 8 + size
        per_sample += 9  # mask and lengths
    return max(1, min(limit, GROUP_BYTES // max(1, minibatch_size * per_sample)))


def _chunk_count(reader):
    """The chunks that partitions own, whole (for a composite reader the first deserializer's); a large number
    when the reader does not say."""
    return reader.partition_chunks() or 1 << 62


class _GroupedDataset(IterableDataset):
    """What MinibatchLoader hands its DataLoader: the dataset's items, in a worker process sent several at a time
    (a _WorkerGroup of up to GROUP_BYTES or _GROUP_ITEMS); other attributes are the dataset's."""

    def __init__(self, dataset, group):
        super().__init__()
        self.dataset = dataset
        self.group = group

    def __getattr__(self, name):
        if name in ("dataset", "group"):  # not set yet (while unpickling)
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def __iter__(self):
        if not self.group:
            yield from self.dataset
            return
        in_worker = get_worker_info() is not None
        if in_worker:
            _worker_pool().max_segments = 2 * _MAX_SEGMENTS  # a group is one segment
        for items, _ in self.dataset._groups(_GROUP_ITEMS if in_worker else 0):
            yield _WorkerGroup(items) if in_worker else _Minibatches(items)


class MinibatchLoader(DataLoader):
    """A DataLoader for a MinibatchDataset (``batch_size=None``) that records the reader state of every item it
    hands out, so ``dataset.state_dict()`` in the training process is exact with worker processes too."""

    def __init__(self, dataset, num_workers=0, **kwargs):
        if not isinstance(dataset, MinibatchDataset):
            raise TypeError("MinibatchLoader needs a cntkio.torch.MinibatchDataset")
        dataset.emit_state = True
        _ensure_arena()
        if num_workers > 0:
            kwargs.setdefault("prefetch_factor", PREFETCH_FACTOR)
        # Items are tensors already: PyTorch's default_convert would only walk and copy every dict (twice per
        # item with workers, about 15 µs each time). A collate_fn of the caller's sees single minibatches.
        group = "collate_fn" not in kwargs
        kwargs.setdefault("collate_fn", _as_is)
        super().__init__(_GroupedDataset(dataset, group), batch_size=None, num_workers=num_workers, **kwargs)

    def __iter__(self):
        dataset = self.dataset.dataset
        for item in super().__iter__():
            if isinstance(item, _Minibatches):
                for minibatch in item:
                    yield dataset.record(minibatch)
            else:
                yield dataset.record(item)
        if self.num_workers > 0:
            # The worker processes advanced their copies (persistent ones keep them for the next epoch); advance
            # the training process's copy likewise, so that a checkpoint taken now names the next epoch.
            dataset.set_epoch(dataset.epoch + 1)
            dataset._resume = None
