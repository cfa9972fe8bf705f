"""cntkio.torch: minibatches as tensors, exact-once splitting across DataLoader workers and ranks, epochs and
state_dict/load_state_dict, and the PyTorch example."""

import functools
import os
import pickle
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import cntkio
import cntkio.torch
from conftest import REPO, ctf_source, write_ctf

N = 90
LENGTHS = [1 + i % 4 for i in range(N)]


def make_source(path, randomize=True):
    streams = cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2),
                                labels=cntkio.StreamDef(field="l", shape=5, is_sparse=True))
    return cntkio.MinibatchSource(cntkio.CTFDeserializer(path, streams), randomize=randomize,
                                  randomization_window_in_samples=40 if randomize else 0)


def write_config(path):
    """A reader config over `path` with small chunks, so randomized partitions own whole chunks each."""
    text = path + ".cntk"
    with open(text, "w") as out:
        out.write('r = [ reader = [ randomize = true ; randomizationWindow = 2 ; sampleBasedRandomizationWindow = '
                  'false\n deserializers = ( [ type = CNTKTextFormatDeserializer ; file = "%s" ; chunkSizeInBytes '
                  '= 150 ; input = [ features = [ alias = f ; dim = 2 ; format = dense ] ] ] ) ] ]\n' % path)
    return text


def make_config_source(path):
    """Reads the config write_config(path) wrote (each worker process calls this)."""
    return cntkio.MinibatchSource.from_config(path + ".cntk", "r")


@pytest.fixture
def data(tmp_path):
    path = write_ctf(tmp_path / "t.ctf", LENGTHS)
    write_config(path)
    return path


def ids_of(batch):
    f, mask = batch["features"], batch["features_mask"]
    return f[:, 0, 0].long().tolist(), mask


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_items_are_tensors_with_masks_and_sparse_indices(data):
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, data, False), 8)
    batch = next(iter(dataset))
    ids = batch["features"][:, 0, 0].long().tolist()
    assert ids == [0, 1, 2]  # 1 + 2 + 3 samples; sequence 3 (4 samples) does not fit in 8
    assert batch["features"].dtype == torch.float32 and batch["features"].shape == (3, 3, 2)
    assert batch["features_mask"].tolist() == [[2, 0, 0], [2, 1, 0], [2, 1, 1]]
    assert batch["features_lengths"].tolist() == [1, 2, 3]
    assert batch["labels"].shape == (3, 1, 1) and batch["labels"][:, 0, 0].tolist() == [0, 1, 2]
    assert batch["labels_values"][:, 0, 0].tolist() == [1, 2, 3]
    dense = cntkio.torch.MinibatchDataset(functools.partial(make_source, data, False), 8, sparse="dense")
    labels = next(iter(dense))["labels"]
    assert labels.shape == (3, 1, 5) and labels[:, 0].tolist() == np.diag([1.0, 2.0, 3.0, 0, 0])[:3].tolist()
    csr = cntkio.torch.MinibatchDataset(functools.partial(make_source, data, False), 8, sparse="csr")
    item = next(iter(csr))
    assert item["labels"].layout == torch.sparse_csr and item["labels"].to_dense()[:, :3].tolist() == \
        np.diag([1.0, 2.0, 3.0]).tolist()
    assert item["labels_offsets"].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("defer", [True, False])
def test_sparse_as_dense_keeps_the_last_of_duplicate_indices_as_cntk_does(tmp_path, monkeypatch, defer):
    # CNTK writes a sparse sample into a dense column entry by entry, in input order: the last one wins
    # (spec pipeline.md, sparse input packed as dense). Items made either way follow that rule.
    path = tmp_path / "dup.ctf"
    path.write_text("0 |f 0 0 |l 2:1 2:5 4:3 2:7\n1 |f 1 1 |l 0:2\n1 |f 1 1 |l 1:4 1:4\n")
    monkeypatch.setattr(cntkio.torch, "_DEFER_VALUES", defer)
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, str(path), False), 8, sparse="dense")
    labels = next(iter(dataset))["labels"]
    assert labels.tolist() == [[[0, 0, 7, 0, 3], [0, 0, 0, 0, 0]], [[2, 0, 0, 0, 0], [0, 4, 0, 0, 0]]]


def collect(dataset, workers):
    ids = []
    for batch in DataLoader(dataset, batch_size=None, num_workers=workers):
        ids += ids_of(batch)[0]
    return ids


def file_order_source(path):
    return make_source(path, randomize=False)


@pytest.mark.parametrize("factory", [file_order_source, make_config_source])
def test_workers_and_ranks_read_each_sequence_once(data, factory):
    everything = []
    for rank in range(2):
        dataset = cntkio.torch.MinibatchDataset(functools.partial(factory, data), 10, rank=rank, world_size=2)
        got = collect(dataset, workers=2)
        assert got  # every rank gets data
        everything += got
    assert sorted(everything) == list(range(N))


def arena_segments():
    """(slot, offset, size) of every segment listed in the arena's slot tables (the workers' segments)."""
    arena = cntkio.torch._arena
    out = []
    for slot in range(cntkio.torch._ARENA_SLOTS):
        start = slot * cntkio.torch._ARENA_SLOT_BYTES
        table = arena.array[start:start + cntkio.torch._ARENA_HEADER].view(np.int64)
        out += [(slot, int(table[1 + 2 * k]), int(table[2 + 2 * k])) for k in range(int(table[0]))]
    return out


@pytest.fixture
def fresh_arena(monkeypatch):
    """A new arena for this test (earlier tests' workers left segments in the process's arena)."""
    monkeypatch.setattr(cntkio.torch, "_arena", None)
    cntkio.torch._ensure_arena()
    assert cntkio.torch._arena is not None and not arena_segments()


@pytest.fixture(params=["arena", "own segments"])
def transport(request, monkeypatch):
    """Worker items through the arena of this process, or (no arena) through segments of each worker's own."""
    if request.param == "arena":
        request.getfixturevalue("fresh_arena")
    else:
        monkeypatch.setattr(cntkio.torch, "_ensure_arena", lambda: None)
        monkeypatch.setattr(cntkio.torch, "_arena", None)
    return request.param


def expected_items(factory, sparse, partitions=2):
    expected = {}
    for rank in range(partitions):
        for item in cntkio.torch.MinibatchDataset(factory, 10, sparse=sparse, rank=rank, world_size=partitions):
            expected[ids_of(item)[0][0]] = item
    return expected


def assert_same_item(item, want):
    assert list(item) == list(want)
    for key, tensor in want.items():
        assert item[key].dtype == tensor.dtype and item[key].shape == tensor.shape, key
        assert torch.equal(item[key], tensor), key


@pytest.mark.parametrize("sparse,keep", [("indices", 3), ("dense", 3), ("indices", 0)])
def test_worker_items_equal_the_same_partitions_read_in_process(data, sparse, keep, transport):
    """Worker items travel in shared-memory segments that the workers reuse; they must arrive with the keys,
    dtypes, shapes and values of the same partitions read in this process, stay intact while later items
    arrive (the loop keeps every `keep`-th item), and the workers use a bounded number of segments."""
    factory = functools.partial(file_order_source, data)
    expected = expected_items(factory, sparse)
    kept, segments = [], set()
    earlier = set(cntkio.torch._segments)  # those of earlier tests' workers, forgotten lazily
    loader = DataLoader(cntkio.torch.MinibatchDataset(factory, 10, sparse=sparse, worker_split="chunks"),
                        batch_size=None, num_workers=2)
    for k, item in enumerate(loader):
        assert_same_item(item, expected.pop(ids_of(item)[0][0]))
        if keep and k % keep == 0:
            kept.append((item, dict(item)))
        segments.update(set(cntkio.torch._segments) - earlier)
        assert len(set(cntkio.torch._segments) - earlier) <= 2 * cntkio.torch._MAX_SEGMENTS
    assert not expected and k > 2 * cntkio.torch._MAX_SEGMENTS
    if transport == "arena":
        assert not segments  # nothing came in segments of the workers' own
        used = arena_segments()
        assert 2 <= len(used) <= 2 * cntkio.torch._MAX_SEGMENTS and len({slot for slot, _, _ in used}) == 2
    elif not keep:
        assert len(segments) < k / 2  # segments were reused
    for item, copy in kept:
        assert_same_item(item, {key: tensor.clone() for key, tensor in copy.items()})


def test_items_kept_from_an_epoch_survive_the_next_epochs_workers(data, fresh_arena):
    """The next epoch's workers take over the arena slots of the last and must not write into segments whose
    items the training loop still holds."""
    factory = functools.partial(file_order_source, data)
    dataset = cntkio.torch.MinibatchDataset(factory, 10, worker_split="chunks")
    loader = DataLoader(dataset, batch_size=None, num_workers=2)
    kept = [(item, {key: tensor.clone() for key, tensor in item.items()}) for item in loader]
    before = arena_segments()
    dataset.set_epoch(1)
    expected = expected_items(factory, "indices")
    for item in loader:
        assert_same_item(item, expected.pop(ids_of(item)[0][0]))
    assert not expected
    for item, copy in kept:
        assert_same_item(item, copy)
    assert set(before) <= set(arena_segments())  # the held segments stayed listed, others were added
    del kept, item
    dataset.set_epoch(2)
    for _ in loader:
        pass
    assert len(arena_segments()) <= 2 * cntkio.torch._MAX_SEGMENTS  # all free again: reused or dropped


def test_two_loaders_at_once_write_into_separate_arena_slots(data, tmp_path, fresh_arena):
    """Workers of two DataLoaders iterated together have the same worker ids; each must hold its own slot."""
    other = write_ctf(tmp_path / "other.ctf", [1 + (i + 1) % 4 for i in range(N)])
    factories = [functools.partial(file_order_source, path) for path in (data, other)]
    expected = [expected_items(f, "indices") for f in factories]
    loaders = [DataLoader(cntkio.torch.MinibatchDataset(f, 10, worker_split="chunks"), batch_size=None, num_workers=2)
               for f in factories]
    for a, b in zip(*loaders):
        assert_same_item(a, expected[0].pop(ids_of(a)[0][0]))
        assert_same_item(b, expected[1].pop(ids_of(b)[0][0]))
    assert len({slot for slot, _, _ in arena_segments()}) == 4


def write_varied_ctf(path, lengths):
    """Sequence i of lengths[i] steps: |f i t, and on every step |l with 1 to 3 of 5 indices, values i.t0j."""
    with open(path, "w") as out:
        for i, n in enumerate(lengths):
            for t in range(n):
                nnz = 1 + (i + t) % 3
                label = " ".join("%d:%d.%d%d" % ((i + t + 2 * j) % 5, i, t, j) for j in range(nnz))
                out.write("%d |f %d %d |l %s\n" % (i, i, t, label))
    return path


def converted_source(tmp_path, kind):
    path = write_varied_ctf(str(tmp_path / "varied.ctf"), [1] * N if kind == "frame" else LENGTHS)
    if kind in ("sequence", "frame"):  # frame mode reads one-sample sequences
        return ctf_source(path, frame_mode=kind == "frame", randomization_window_in_samples=40)
    if kind == "shaped":  # a multi-dimensional dense sample shape
        streams = cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=(2, 1)),
                                    labels=cntkio.StreamDef(field="l", shape=5, is_sparse=True))
        return cntkio.MinibatchSource(cntkio.CTFDeserializer(path, streams), randomization_window_in_samples=40)
    with open(path + ".cntk", "w") as out:
        out.write('r = [ reader = [ precision = "double" ; randomize = true ; randomizationWindow = 40\n'
                  'deserializers = ( [ type = CNTKTextFormatDeserializer ; file = "%s" ; input = [\n'
                  'features = [ alias = f ; dim = 2 ; format = dense ]\n'
                  'labels = [ alias = l ; dim = 5 ; format = sparse ] ] ] ) ] ]\n' % path)
    return cntkio.MinibatchSource.from_config(path + ".cntk", "r")


@pytest.mark.parametrize("sparse", ["indices", "dense"])
@pytest.mark.parametrize("kind", ["sequence", "frame", "shaped", "double"])
def test_items_written_by_the_module_equal_the_conversion_of_minibatch_data(tmp_path, sparse, kind):
    """Items are written by the C++ module in one go; they must equal the tensors made from the MinibatchData
    arrays of the same minibatch (the conversion truncated BPTT and sparse='csr' use)."""
    source = converted_source(tmp_path, kind)
    dataset = cntkio.torch.MinibatchDataset(lambda: source, 7, sparse=sparse)
    source._reader.set_v2_limits(cntkio.INFINITELY_REPEAT, 1)
    count, padded = 0, False
    while True:
        batch = source._reader.next_v2(7, 1, 0)
        if batch is None:
            break
        buffer, entries = batch.torch_item(sparse == "dense", cntkio.torch._ALIGN, cntkio.torch._ALIGN,
                                           cntkio.torch._allocate, {})
        got = dataset._item(buffer, entries, source, None)
        want = dataset._tensors(source._wrap(batch), {})
        assert list(got) == list(want)
        for key, tensor in want.items():
            assert got[key].dtype == tensor.dtype and got[key].shape == tensor.shape, key
            assert torch.equal(got[key], tensor), key
        count += 1
        padded = padded or (sparse == "indices" and bool((got["labels"] == -1).any()))
    assert count > 10
    assert got["features"].dtype == (torch.float64 if kind == "double" else torch.float32)
    if sparse == "indices":
        assert padded  # samples with fewer non-zeros than the widest one


def test_epochs_are_successive_sweeps(data):
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, data), 12)
    first = [i for b in dataset for i in ids_of(b)[0]]
    second = [i for b in dataset for i in ids_of(b)[0]]  # in one process the epoch advances by itself
    assert sorted(first) == sorted(second) == list(range(N)) and first != second
    dataset.set_epoch(1)
    assert [i for b in dataset for i in ids_of(b)[0]] == second
    source = make_source(data)  # the same order as cntk.io reading two sweeps
    reference = []
    while len(reference) < 2 * N:
        reference += [int(s[0, 0]) for s in source.next_minibatch(12)["features"].as_sequences()]
    assert sorted(reference[:N]) == list(range(N)) and reference[N:2 * N] == second


def test_epoch_size_in_samples(data):
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, data, False), 7, epoch_size=20)
    assert [i for b in dataset for i in ids_of(b)[0]] == [0, 1, 2, 3, 4, 5, 6, 7]  # starts 0 1 3 6 10 11 13 16
    assert [i for b in dataset for i in ids_of(b)[0]] == [8, 9, 10, 11, 12, 13, 14, 15]  # starts 20 .. 36


@pytest.mark.parametrize("workers_before,workers_after", [(2, 2), (2, 3), (0, 2)])
def test_state_dict_resumes_without_loss_or_repeat(data, workers_before, workers_after):
    factory = functools.partial(make_config_source, data)
    dataset = cntkio.torch.MinibatchDataset(factory, 6)
    before = []
    for k, batch in enumerate(cntkio.torch.MinibatchLoader(dataset, num_workers=workers_before)):
        before += ids_of(batch)[0]
        if k == 4:
            state = dataset.state_dict()
            break
    assert state["epoch"] == 0 and state["states"]
    resumed = cntkio.torch.MinibatchDataset(factory, 6)
    resumed.load_state_dict(state)
    after = [i for b in cntkio.torch.MinibatchLoader(resumed, num_workers=workers_after) for i in ids_of(b)[0]]
    assert sorted(before + after) == list(range(N))
    assert resumed.epoch == 1  # the loader moved on to the next epoch


def counted_source(path, log=None):
    """A file-order source over `path`; with `log`, appends "pid indexes-built-before indexes-built-after"."""
    before = cntkio._core.ctf_index_builds()
    streams = cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2))
    source = cntkio.MinibatchSource(cntkio.CTFDeserializer(path, streams), randomize=False)
    if log is not None:
        with open(log, "a") as out:
            out.write("%d %d %d\n" % (os.getpid(), before, cntkio._core.ctf_index_builds()))
    return source


def builds(log):
    """{pid: indexes that pid built while making its sources}, and the log emptied."""
    per_pid = {}
    if os.path.exists(log):
        for line in open(log):
            pid, before, after = map(int, line.split())
            per_pid[pid] = per_pid.get(pid, 0) + after - before
        os.remove(log)
    return per_pid


def test_the_dataset_indexes_once_for_its_workers_and_epochs(data, tmp_path):
    time.sleep(1.1)  # an index is shared only for a file that has been still for a second
    log = str(tmp_path / "sources.log")
    dataset = cntkio.torch.MinibatchDataset(functools.partial(counted_source, data, log), 10)
    assert builds(log) == {os.getpid(): 1}  # made here, at once
    in_process = collect(dataset, workers=0)  # reads with the source made above
    assert builds(log) == {}
    assert sorted(collect(dataset, workers=2)) == sorted(in_process) == list(range(N))
    workers = builds(log)
    assert len(workers) == 2 and os.getpid() not in workers and set(workers.values()) == {0}
    dataset.set_epoch(1)
    assert sorted(collect(dataset, workers=0)) == list(range(N))
    assert builds(log) == {}  # reads on with this process's source of epoch 0

    # share_index=False: nothing made here; every worker indexes the file itself.
    own = cntkio.torch.MinibatchDataset(functools.partial(counted_source, data, log), 10, share_index=False)
    del dataset
    assert builds(log) == {}
    assert sorted(collect(own, workers=2)) == list(range(N))
    workers = builds(log)
    assert len(workers) == 2 and set(workers.values()) == {1}


def test_a_bad_source_fails_when_the_dataset_is_made(tmp_path):
    with pytest.raises(OSError, match="missing.ctf"):
        cntkio.torch.MinibatchDataset(functools.partial(counted_source, str(tmp_path / "missing.ctf")), 10)
    lazy = cntkio.torch.MinibatchDataset(functools.partial(counted_source, str(tmp_path / "missing.ctf")), 10,
                                         share_index=False)
    with pytest.raises(OSError, match="missing.ctf"):
        next(iter(lazy))


def test_a_dataset_pickles_without_its_index(data):
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, data, False), 10)
    copy = pickle.loads(pickle.dumps(dataset))  # what a spawned worker receives
    assert [ids_of(b)[0] for b in copy] == [ids_of(b)[0] for b in dataset]


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_csr_refuses_worker_processes(data):
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, data), 8, sparse="csr")
    with pytest.raises(ValueError, match="sparse='csr' works only with num_workers=0"):
        list(DataLoader(dataset, batch_size=None, num_workers=1))


def test_train_pytorch_example_loss_falls():
    result = subprocess.run([sys.executable, str(REPO / "examples" / "train_pytorch.py"), "--epochs", "5"],
                            capture_output=True, text=True, env=dict(os.environ), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "300 sequences" in result.stdout and "loss fell" in result.stdout


@pytest.mark.parametrize("frame_mode", [False, True])
def test_arrays_of_a_minibatch_stay_intact_while_later_minibatches_reuse_buffers(tmp_path, frame_mode):
    """The reader writes new minibatches into the buffers of those Python no longer holds: an array still
    viewing an earlier minibatch (frame-mode dense values, sparse matrices) must keep its values."""
    path = write_varied_ctf(str(tmp_path / "v.ctf"), [1] * N if frame_mode else LENGTHS)
    source = ctf_source(path, frame_mode=frame_mode, randomize=False)
    kept = []
    for i in range(N // 3):
        mb = source.next_minibatch(7)
        if not mb:
            break
        features = mb[source.streams.features].asarray()
        labels = mb[source.streams.labels].asarray()
        if i % 3 == 0:
            kept.append((features, features.copy(), labels, labels.copy()))
        del mb, features, labels
    assert len(kept) > 3
    assert not kept[0][2].data.flags.owndata and (not frame_mode or not kept[0][0].flags.owndata)  # views
    for features, features_copy, labels, labels_copy in kept:
        assert np.array_equal(features, features_copy)
        assert (labels != labels_copy).nnz == 0


class ChangingDataset(cntkio.torch.MinibatchDataset):
    """Changes its items in the worker after they were written: a replaced tensor, a tensor reshaped in place
    and a value that is not a tensor."""

    def __iter__(self):
        for item in super().__iter__():
            item["features_lengths"] = item["features_lengths"] * 2
            item["features_mask"].unsqueeze_(0)
            item["note"] = "changed"
            yield item


def test_items_changed_in_the_worker_arrive_as_changed(data):
    factory = functools.partial(file_order_source, data)
    expected = expected_items(factory, "indices")
    loader = DataLoader(ChangingDataset(factory, 10, worker_split="chunks"), batch_size=None, num_workers=2)
    for item in loader:
        want = expected.pop(ids_of(item)[0][0])
        assert item.pop("note") == "changed"
        assert torch.equal(item["features_lengths"], want["features_lengths"] * 2)
        assert torch.equal(item["features_mask"], want["features_mask"].unsqueeze(0))
        for key in set(want) - {"features_lengths", "features_mask"}:
            assert torch.equal(item[key], want[key]), key
    assert not expected


def test_release_free_heap_hands_freed_blocks_back(tmp_path):
    # In a process of its own, so that this test's heap is not the one the other tests left behind.
    script = tmp_path / "heap.py"
    script.write_text(
        "import os, cntkio\n"
        "def rss():\n"
        "    with open('/proc/self/statm') as f:\n"
        "        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')\n"
        "blocks = [bytes(4000) for _ in range(25000)]  # 100 MB of blocks from malloc (too big for pymalloc)\n"
        "kept = blocks[::16]  # live blocks between the freed ones: the heap cannot shrink from its top\n"
        "del blocks\n"
        "before = rss()\n"
        "assert cntkio._core.release_free_heap()\n"
        "print(before - rss())\n")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 50 << 20


def test_forks_after_a_dataset_is_made_trim_the_heap_first(data, monkeypatch):
    calls = []
    monkeypatch.setattr(cntkio._core, "release_free_heap", lambda: calls.append(os.getpid()) or True)
    cntkio.torch.MinibatchDataset(functools.partial(file_order_source, data), 10)
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    assert calls == [os.getpid()]


def write_rich_data(tmp_path, frame):
    """CTF data whose streams differ in length per sequence (the sparse stream is on every other row), with
    sparse samples of 0 to 3 entries; `frame`: one row per sequence."""
    path = tmp_path / ("frame.ctf" if frame else "rich.ctf")
    with open(path, "w") as out:
        for i in range(60):
            for t in range(1 if frame else 1 + (i * 7) % 5):
                dense = " ".join("%d.%d" % (i, t * 6 + k) for k in range(6))
                sparse = ""
                if t % 2 == 0:
                    pairs = ["%d:%d.%d" % ((i * 3 + k * 5) % 11, i, k) for k in range((i + t) % 4)]
                    sparse = " |s " + " ".join(pairs)
                out.write("%d |d %s%s\n" % (i, dense, sparse))
    return str(path)


def rich_config(tmp_path, data, precision, frame, randomize):
    config = tmp_path / ("rich-%s-%s-%s.cntk" % (precision, frame, randomize))
    config.write_text(
        'r = [ precision = "%s" ; reader = [ randomize = %s ; frameMode = %s ; randomizationWindow = 3 ; '
        'sampleBasedRandomizationWindow = false\n deserializers = ( [ type = CNTKTextFormatDeserializer ; '
        'file = "%s" ; chunkSizeInBytes = 400 ; input = [ dense = [ alias = d ; dim = 6 ; format = dense ]\n'
        ' sparse = [ alias = s ; dim = 11 ; format = sparse ] ] ] ) ] ]\n'
        % (precision, str(randomize).lower(), str(frame).lower(), data))
    return str(config)


def config_source(config):
    return cntkio.MinibatchSource.from_config(config, "r")


@pytest.mark.parametrize("precision", ["float", "double"])
@pytest.mark.parametrize("frame", [False, True])
@pytest.mark.parametrize("sparse", ["indices", "dense"])
def test_items_from_deferred_values_equal_items_from_packed_minibatches(tmp_path, monkeypatch, precision, frame,
                                                                        sparse):
    config = rich_config(tmp_path, write_rich_data(tmp_path, frame), precision, frame, randomize=True)
    factory = functools.partial(config_source, config)

    def items(defer, workers):
        monkeypatch.setattr(cntkio.torch, "_DEFER_VALUES", defer)
        dataset = cntkio.torch.MinibatchDataset(factory, 13, sparse=sparse)
        return list(DataLoader(dataset, batch_size=None, num_workers=workers))

    for workers in (0, 2):  # with 2 workers, each reads its own partition: other minibatches
        packed = items(False, workers)
        assert len(packed) > 4
        assert packed[0]["dense"].dtype == (torch.float32 if precision == "float" else torch.float64)
        if sparse == "indices":
            assert max(item["sparse"].shape[-1] for item in packed) == 3  # the widest sample has 3 entries
        deferred = items(True, workers)
        by_first = {float(item["dense"].flatten()[0]): item for item in deferred}  # workers' items interleave
        assert len(by_first) == len(deferred) == len(packed)
        for want in packed:
            got = by_first[float(want["dense"].flatten()[0])]
            assert sorted(got) == sorted(want)
            for key in want:
                assert got[key].dtype == want[key].dtype and torch.equal(got[key], want[key]), key


def test_deferred_minibatches_have_no_stream_arrays(data):
    source = make_source(data, randomize=False)
    reader = source._reader
    reader.set_v2_limits(cntkio.INFINITELY_REPEAT, 1)
    assert reader.defer_values(True)
    batch = reader.next_v2(8, 1, 0)
    with pytest.raises(RuntimeError, match="deferred values"):
        batch.stream(0)
    buffer, entries = batch.torch_item(False, 64, 64, lambda n: np.zeros(n, np.uint8))
    features = dict((e[0], e) for e in entries)["features"]
    _, dtype, shape, offset, nbytes = features
    values = buffer[offset:offset + nbytes].view(dtype).reshape(shape)
    assert values[:, 0, 0].tolist() == [0, 1, 2] and values[2, :, 1].tolist() == [0, 1, 2]


def test_a_worker_pool_never_retires_a_segment_whose_item_was_not_sent_yet(monkeypatch):
    """With every segment in use, the pool makes a new one and forgets the oldest the training process has
    received; a segment whose item still waits in the worker's queue (taken, not yet pickled) must stay, or
    the item arrives naming a segment the training process was told to drop."""
    monkeypatch.setattr(cntkio.torch, "_arena", None)  # segments of the pool's own
    pool = cntkio.torch._SegmentPool()
    waiting = [pool.take(64) for _ in range(cntkio.torch._MAX_SEGMENTS)]  # none pickled yet
    extra = pool.take(64)
    assert all(s in pool.segments for s in waiting) and extra in pool.segments and not pool.retired
    pool.hand_over(waiting[3])  # pickled: the training process has it (and holds it)
    pool.take(64)
    assert waiting[3] not in pool.segments and pool.retired == [waiting[3].id]
    assert all(s in pool.segments for k, s in enumerate(waiting) if k != 3)


def test_rank_and_world_size_are_checked_when_the_dataset_is_made(data):
    factory = functools.partial(file_order_source, data)
    for rank, world_size in ((-1, 2), (2, 2), (0, 0)):
        with pytest.raises(ValueError):
            cntkio.torch.MinibatchDataset(factory, 16, rank=rank, world_size=world_size)
