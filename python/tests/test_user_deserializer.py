"""UserDeserializer (cntk.io 2.7): a deserializer written in Python, read by the C++ pipeline like any other.

The reference everywhere is the same data written to a CTF file and read by CTFDeserializer: a Python-defined
deserializer, alone or joined with a CTF deserializer, must give exactly the minibatches the CTF file gives
(randomized, split across workers, restored from a checkpoint mid-sweep, in frame, sequence and truncated
mode)."""

import pickle

import numpy as np
import pytest
import scipy.sparse

import cntkio as io

LABEL_DIM = 7


def features_of(i):
    """Sequence i's dense samples [length, 2]: length 1 + i % 4, values from i."""
    n = 1 + i % 4
    return np.stack([np.arange(n, dtype=np.float32) + 10 * i, -np.arange(n, dtype=np.float32) - i], axis=1)


def labels_of(i):
    """Sequence i's sparse samples [length, LABEL_DIM]: one sample per feature step, class (i + t) % dim,
    value i + 1 + t."""
    n = 1 + i % 4
    rows = np.arange(n)
    values = (rows + i + 1).astype(np.float32)
    return scipy.sparse.csr_matrix((values, (rows, (rows + i) % LABEL_DIM)), shape=(n, LABEL_DIM))


def write_ctf(path, count, streams=("x", "y"), frames=False):
    """Sequences 0..count-1 with explicit ids, the streams chosen; frames: one sample per sequence."""
    with open(path, "w") as out:
        for i in range(count):
            x = features_of(i)[:1] if frames else features_of(i)
            y = labels_of(i)[:1] if frames else labels_of(i)
            for t in range(len(x)):
                line = "%d" % i
                if "x" in streams:
                    line += " |x %g %g" % (x[t, 0], x[t, 1])
                if "y" in streams:
                    row = y[t]
                    line += " |y " + " ".join("%d:%g" % (j, v) for j, v in zip(row.indices, row.data))
                out.write(line + "\n")
    return str(path)


def ctf(path, streams=("x", "y")):
    defs = {}
    if "x" in streams:
        defs["x"] = io.StreamDef(field="x", shape=2)
    if "y" in streams:
        defs["y"] = io.StreamDef(field="y", shape=LABEL_DIM, is_sparse=True)
    return io.CTFDeserializer(path, io.StreamDefs(**defs))


class Sequences(io.UserDeserializer):
    """The same sequences as write_ctf, `per_chunk` to a chunk, in sequence mode."""

    def __init__(self, count, per_chunk, streams=("x", "y"), frames=False):
        super().__init__()
        self.count, self.per_chunk, self.streams, self.frames = count, per_chunk, streams, frames
        self.calls = []

    def stream_infos(self):
        infos = []
        if "x" in self.streams:
            infos.append(io.StreamInformation("x", len(infos), "dense", np.float32, (2,)))
        if "y" in self.streams:
            infos.append(io.StreamInformation("y", len(infos), "sparse", np.float32, (LABEL_DIM,)))
        return infos

    def num_chunks(self):
        return (self.count + self.per_chunk - 1) // self.per_chunk

    def get_chunk(self, chunk_id):
        self.calls.append(chunk_id)
        ids = range(chunk_id * self.per_chunk, min(self.count, (chunk_id + 1) * self.per_chunk))
        out = {}
        if self.frames:  # sample mode: one row per sequence
            if "x" in self.streams:
                out["x"] = np.concatenate([features_of(i)[:1] for i in ids])
            if "y" in self.streams:
                out["y"] = scipy.sparse.vstack([labels_of(i)[:1] for i in ids]).tocsr()
            return out
        if "x" in self.streams:
            out["x"] = [features_of(i) for i in ids]
        if "y" in self.streams:
            out["y"] = [labels_of(i) for i in ids]
        return out


def read_all(source, size=9, partitions=1, index=0, limit=200):
    """Every minibatch until the end: (keys, x per sequence, y per sequence as dense) per minibatch."""
    out = []
    for _ in range(limit):
        mb = source.next_minibatch(size, num_data_partitions=partitions, partition_index=index)
        if not mb:
            break
        x, y = mb["x"], mb["y"]
        out.append((x.keys, [np.asarray(s).tolist() for s in x.as_sequences()],
                    [s.toarray().tolist() for s in y.as_sequences()], x.end_of_sweep))
    return out


COUNT = 23


@pytest.fixture
def full_ctf(tmp_path):
    return write_ctf(tmp_path / "full.ctf", COUNT)


@pytest.fixture
def x_ctf(tmp_path):
    return write_ctf(tmp_path / "x.ctf", COUNT, streams=("x",))


@pytest.fixture
def y_ctf(tmp_path):
    return write_ctf(tmp_path / "y.ctf", COUNT, streams=("y",))


SETTINGS = [dict(randomize=False), dict(randomization_seed=0), dict(randomization_seed=5),
            dict(randomization_window_in_samples=10, randomization_seed=3)]


@pytest.mark.parametrize("settings", SETTINGS)
def test_alone_gives_the_minibatches_of_the_ctf_file(full_ctf, settings):
    # One chunk each: CTF's chunk of this small file and the deserializer's single chunk randomize alike.
    expected = read_all(io.MinibatchSource(ctf(full_ctf), max_sweeps=2, **settings))
    got = read_all(io.MinibatchSource(Sequences(COUNT, COUNT), max_sweeps=2, **settings))
    assert len(expected) > 4
    assert got == expected


@pytest.mark.parametrize("settings", SETTINGS)
def test_joined_as_secondary_with_a_ctf_primary(full_ctf, x_ctf, settings):
    expected = read_all(io.MinibatchSource(ctf(full_ctf), max_sweeps=2, **settings))
    joined = io.MinibatchSource([ctf(x_ctf, ("x",)), Sequences(COUNT, 4, streams=("y",))], max_sweeps=2, **settings)
    assert read_all(joined) == expected


@pytest.mark.parametrize("settings", SETTINGS)
def test_joined_as_primary_with_a_ctf_secondary(full_ctf, y_ctf, settings):
    expected = read_all(io.MinibatchSource(ctf(full_ctf), max_sweeps=2, **settings))
    joined = io.MinibatchSource([Sequences(COUNT, COUNT, streams=("x",)), ctf(y_ctf, ("y",))], max_sweeps=2,
                                **settings)
    assert read_all(joined) == expected


def test_two_workers_read_what_the_ctf_file_gives_them(full_ctf, x_ctf):
    for rank in range(2):  # one chunk: worker 0 reads it all, as CNTK splits by chunk
        expected = read_all(io.MinibatchSource(ctf(full_ctf), max_sweeps=1, randomization_seed=2), 8, 2, rank)
        joined = io.MinibatchSource([ctf(x_ctf, ("x",)), Sequences(COUNT, 3, streams=("y",))], max_sweeps=1,
                                    randomization_seed=2)
        assert read_all(joined, 8, 2, rank) == expected
        assert bool(expected) == (rank == 0)


def test_two_workers_of_a_multi_chunk_primary_joined_with_ctf(y_ctf):
    for rank in range(2):
        expected = read_all(io.MinibatchSource(Sequences(COUNT, 3), max_sweeps=2, randomization_seed=2), 8, 2, rank)
        joined = io.MinibatchSource([Sequences(COUNT, 3, streams=("x",)), ctf(y_ctf, ("y",))], max_sweeps=2,
                                    randomization_seed=2)
        assert read_all(joined, 8, 2, rank) == expected
        assert len(expected) > 2


def test_two_workers_split_a_multi_chunk_deserializer_without_loss():
    seen = []
    for rank in range(2):
        source = io.MinibatchSource(Sequences(COUNT, 3), max_sweeps=1, randomization_seed=4)
        seen += [k for keys, *_ in read_all(source, 8, 2, rank) for k in keys]
    assert sorted(seen, key=int) == [str(i) for i in range(COUNT)]


def test_multi_chunk_sweep_delivers_every_sequence_once_and_randomizes():
    orders = []
    for seed in (0, 1):
        source = io.MinibatchSource(Sequences(COUNT, 3), max_sweeps=1, randomization_seed=seed)
        batches = read_all(source)
        keys = [k for keys, *_ in batches for k in keys]
        assert sorted(keys, key=int) == [str(i) for i in range(COUNT)]
        for mb_keys, xs, ys, _ in batches:  # every sequence carries its own data
            for k, x, y in zip(mb_keys, xs, ys):
                assert x == features_of(int(k)).tolist()
                assert y == labels_of(int(k)).toarray().tolist()
        orders.append(keys)
    assert orders[0] != orders[1]
    assert orders[0] != [str(i) for i in range(COUNT)]


@pytest.mark.parametrize("per_chunk", [COUNT, 3])
def test_restore_mid_sweep_equals_the_uninterrupted_run(per_chunk, x_ctf):
    def make():
        return io.MinibatchSource([Sequences(COUNT, per_chunk, streams=("x",)), ctf(write_ctf(
            x_ctf.replace("x.ctf", "y2.ctf"), COUNT, streams=("y",)), ("y",))], max_sweeps=2, randomization_seed=7)

    uninterrupted = read_all(make())
    source = make()
    head = read_all(source, limit=3)
    state = source.get_checkpoint_state()
    restored = make()
    restored.restore_from_checkpoint(state)
    assert head + read_all(restored) == uninterrupted
    assert head == uninterrupted[:3]


def test_frame_mode_gives_the_ctf_file_s_frames(tmp_path):
    path = write_ctf(tmp_path / "frames.ctf", COUNT, frames=True)
    for settings in (dict(randomize=False), dict(randomization_seed=1)):
        expected = read_all(io.MinibatchSource(ctf(path), frame_mode=True, max_sweeps=1, **settings), 5)
        got = read_all(io.MinibatchSource(Sequences(COUNT, COUNT, frames=True), frame_mode=True, max_sweeps=1,
                                          **settings), 5)
        assert got == expected and len(got) == 5


def test_truncated_bptt_gives_the_ctf_file_s_slots(full_ctf, x_ctf):
    def slots(source):
        out = []
        while True:
            mb = source.next_minibatch(6)
            if not mb:
                return out
            y = mb["y"].asarray()
            y = y.toarray() if scipy.sparse.issparse(y) else np.asarray(y)
            out.append((np.asarray(mb["x"].asarray()).tolist(), y.tolist(), mb["x"].layout[2].tolist()))

    expected = slots(io.MinibatchSource(ctf(full_ctf), truncation_length=2, max_sweeps=1, randomize=False))
    got = slots(io.MinibatchSource([ctf(x_ctf, ("x",)), Sequences(COUNT, 5, streams=("y",))], truncation_length=2,
                                   max_sweeps=1, randomize=False))
    assert got == expected and expected


def test_sample_mode_rows_are_sequences_of_one_sample():
    class Rows(io.UserDeserializer):
        def stream_infos(self):
            return [io.StreamInformation("x", 0, "dense", np.float32, (2, 3))]

        def num_chunks(self):
            return 2

        def get_chunk(self, chunk_id):
            return {"x": np.arange(4 * 6, dtype=np.float64).reshape(4, 2, 3) + 100 * chunk_id}

    source = io.MinibatchSource(Rows(), randomize=False, max_sweeps=1)
    mb = source.next_minibatch(8)
    assert mb["x"].num_sequences == 8 and mb["x"].num_samples == 8
    assert mb["x"].stream_info.shape == (2, 3)
    values = np.concatenate([s for s in mb["x"].as_sequences()])
    assert values.dtype == np.float32
    np.testing.assert_array_equal(values[4], np.arange(6).reshape(2, 3) + 100)


def test_chunks_are_loaded_on_demand_after_indexing():
    d = Sequences(COUNT, 3)
    source = io.MinibatchSource(d, max_sweeps=1, randomize=False)
    indexed = list(d.calls)
    assert indexed == list(range(8))  # the index: every chunk once, when the source is made
    source.next_minibatch(2)
    assert d.calls[len(indexed)] == 0


def test_pickles_as_its_python_object():
    d = io.MinibatchSource(Sequences(5, 2), randomize=False, max_sweeps=1)
    again = pickle.loads(pickle.dumps(Sequences(5, 2)))
    assert read_all(d) == read_all(io.MinibatchSource(again, randomize=False, max_sweeps=1))


def test_reading_does_not_hold_the_gil_while_waiting():
    import threading
    import time

    class Slow(Sequences):
        def get_chunk(self, chunk_id):
            time.sleep(0.002)
            return super().get_chunk(chunk_id)

    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        source = io.MinibatchSource(Slow(200, 2), max_sweeps=1, randomization_seed=1)
        assert sum(len(keys) for keys, *_ in read_all(source, 16, limit=1000)) == 200
    finally:
        stop.set()
        thread.join()
    assert len(ticks) > 10


# -- errors: each names the deserializer and what is wrong


class Broken(Sequences):
    def __init__(self, fault, **kwargs):
        super().__init__(6, 3, **kwargs)
        self.fault = fault
        self.loads = 0

    def get_chunk(self, chunk_id):
        self.loads += 1
        data = super().get_chunk(chunk_id)
        if self.fault == "raise" and self.loads > 2:
            raise RuntimeError("disk on fire")
        if self.fault == "oserror" and self.loads > 2:
            raise FileNotFoundError(2, "No such file or directory", "/data/missing.bin")
        if self.fault == "memory" and self.loads > 2:
            raise MemoryError("no room for chunk %d" % chunk_id)
        if self.fault == "fewer" and self.loads > 2:
            data["x"] = data["x"][:-1]
            data["y"] = data["y"][:-1]
        if self.fault == "shorter" and self.loads > 2:
            data["x"] = [x[:-1] if len(x) > 1 else x for x in data["x"]]
            data["y"] = [y[:-1] if y.shape[0] > 1 else y for y in data["y"]]
        if self.fault == "mismatch":
            data["y"] = data["y"][:-1]
        if self.fault == "shape":
            data["x"] = [x[:, :1] for x in data["x"]]
        if self.fault == "dense-sparse":
            data["y"] = [y.toarray() for y in data["y"]]
        if self.fault == "complex":
            data["x"] = [x * (1 + 1j) for x in data["x"]]
        if self.fault == "missing":
            del data["y"]
        if self.fault == "not-a-dict":
            return [data["x"]]
        return data


def test_an_exception_in_get_chunk_is_a_format_error_naming_the_class_and_the_chunk():
    source = io.MinibatchSource(Broken("raise"), randomize=False, max_sweeps=1)
    with pytest.raises(io.FormatError, match=r"(?s)could not load chunk 0.*RuntimeError: disk on fire.*Broken"):
        read_all(source)


def test_an_oserror_in_get_chunk_stays_an_oserror_and_memoryerror_stays_itself():
    source = io.MinibatchSource(Broken("oserror"), randomize=False, max_sweeps=1)
    with pytest.raises(FileNotFoundError, match=r"(?s)could not load chunk 0.*/data/missing\.bin") as caught:
        read_all(source)
    assert caught.value.errno == 2
    source = io.MinibatchSource(Broken("memory"), randomize=False, max_sweeps=1)
    with pytest.raises(MemoryError, match="no room for chunk 0"):
        read_all(source)


@pytest.mark.parametrize("fault, text", [("fewer", "returned 2 sequences, 3 when it was indexed"),
                                         ("shorter", "samples, shorter than when it was indexed")])
def test_a_chunk_that_changed_since_indexing_is_an_error(fault, text):
    source = io.MinibatchSource(Broken(fault), randomize=False, max_sweeps=1)
    with pytest.raises(io.FormatError, match=text + ".*the same data each time"):
        read_all(source)


@pytest.mark.parametrize("fault, text", [
    ("mismatch", "stream 'y' has 2 sequences, stream 'x' has 3"),
    ("shape", r"the array has shape \(\d+, 1\); the stream's samples have shape \(2,\)"),
    ("dense-sparse", "a sparse stream needs a scipy.sparse.csr_matrix"),
    ("complex", "the values must be real numbers, not complex"),
    ("missing", "returned no data for stream 'y'"),
    ("not-a-dict", "it must return a dict"),
])
def test_bad_chunks_are_refused_when_the_source_is_made(fault, text):
    with pytest.raises((ValueError, TypeError), match=text) as caught:
        io.MinibatchSource(Broken(fault), randomize=False, max_sweeps=1)
    assert "Broken.get_chunk(0)" in str(caught.value)


@pytest.mark.parametrize("chunks", [0, -1, 2.5, "3"])
def test_num_chunks_must_be_a_positive_int(chunks):
    class Counted(Sequences):
        def num_chunks(self):
            return chunks

    with pytest.raises(ValueError, match=r"num_chunks\(\) returned"):
        io.MinibatchSource(Counted(3, 1))


def test_stream_ids_must_run_in_order():
    class Misnumbered(Sequences):
        def stream_infos(self):
            return [io.StreamInformation("x", 1, "dense", np.float32, (2,))]

    with pytest.raises(ValueError, match="ids must be 0, 1"):
        io.MinibatchSource(Misnumbered(3, 1, streams=("x",)))


def test_unimplemented_methods_say_which():
    with pytest.raises(NotImplementedError, match="stream_infos"):
        io.MinibatchSource(io.UserDeserializer())


def test_config_text_says_python_code_has_none():
    source = io.MinibatchSource(Sequences(3, 1))
    with pytest.raises(ValueError, match="UserDeserializer is Python code"):
        source.config_text


EXIT_WHILE_LOADING = """
import time
import numpy as np
import cntkio as io

class Slow(io.UserDeserializer):
    def __init__(self):
        super().__init__()
        self.indexed = False

    def stream_infos(self):
        return [io.StreamInformation("x", 0, "dense", np.float32, (1,))]

    def num_chunks(self):
        return 50

    def get_chunk(self, chunk_id):
        if self.indexed:
            time.sleep(0.02)
        if chunk_id == 49:
            self.indexed = True
        return {"x": np.full((3, 1), chunk_id, np.float32)}

source = io.MinibatchSource(Slow(), randomization_window_in_chunks=8)
source.next_minibatch(4)
print("read")
"""


def test_exiting_while_the_reader_loads_a_python_chunk_is_clean(tmp_path):
    import os
    import subprocess
    import sys

    script = tmp_path / "exit.py"
    script.write_text(EXIT_WHILE_LOADING)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for _ in range(3):  # the reader's threads are loading chunks (taking the GIL) when the interpreter exits
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
        assert done.returncode == 0 and done.stdout == "read\n", done.stderr
        assert "Fatal Python error" not in done.stderr


class _Overlaps(io.UserDeserializer):
    """Counts how many get_chunk calls run at once; each call releases the GIL (sleep) in its middle and keeps
    state between its halves in the global random generator, as CNTK's io_tests GenDeserializer does."""

    def __init__(self, chunks):
        super().__init__()
        import threading

        self.chunks = chunks
        self.active = 0
        self.most = 0
        self.guard = threading.Lock()

    def stream_infos(self):
        return [io.StreamInformation("x", 0, "dense", np.float32, (2,))]

    def num_chunks(self):
        return self.chunks

    def get_chunk(self, chunk_id):
        import random
        import time

        with self.guard:
            self.active += 1
            self.most = max(self.most, self.active)
        random.seed(chunk_id)
        time.sleep(0.002)
        lengths = [random.randint(1, 5) for _ in range(20)]
        with self.guard:
            self.active -= 1
        return {"x": [np.full((n, 2), chunk_id, np.float32) for n in lengths]}


@pytest.mark.parametrize("multithreaded", [None, True, False])
def test_get_chunk_calls_never_overlap(multithreaded):
    # Several loader threads want chunks at once; a get_chunk written for CNTK (not thread-safe) must still
    # see one call at a time, or its chunks come back mixed up (here: lengths that differ from the index's).
    user = _Overlaps(12)
    source = io.MinibatchSource(user, randomize=True, randomization_window_in_chunks=4, max_sweeps=2,
                                multithreaded_deserializer=multithreaded)
    samples = 0
    while True:
        mb = source.next_minibatch(37)
        if not mb:
            break
        x = mb[source.streams.x]
        values = x.asarray()[x.mask.astype(bool)]
        assert (values == values[:, :1]).all()  # every sample of a chunk carries its chunk id
        samples += x.num_samples
    assert user.most == 1
    import random

    expected = 0
    for c in range(12):
        random.seed(c)
        expected += sum(random.randint(1, 5) for _ in range(20))
    assert samples == 2 * expected


class _Named(io.UserDeserializer):
    def stream_infos(self):
        return [io.StreamInformation("y", 0, "sparse", np.float32, (1, 3)),
                io.StreamInformation("x", 1, "dense", np.float32, (1, 3))]

    def num_chunks(self):
        return 1

    def get_chunk(self, chunk_id):
        # cntk.io sets self.streams before it reads: a Record of the stream informations by name
        assert self.streams.y.name == "y" and self.streams.x.m_name == "x"
        eye = np.eye(4, 3, dtype=np.float32)
        return {"y": scipy.sparse.csr_matrix(eye), "x": eye.reshape(4, 1, 3)}


def test_streams_record_and_a_sparse_stream_of_several_axes():
    # CNTK's io_tests declare a sparse stream of shape (1, 3): its samples are rows of 3 columns
    user = _Named()
    source = io.MinibatchSource(user, randomize=False)
    assert set(user.streams) == {"x", "y"}
    mb = source.next_minibatch(2)
    y, x = mb[source.streams.y], mb[source.streams.x]
    assert y.shape == x.shape == (2, 1, 1, 3)
    assert (y.asarray().toarray() == np.eye(2, 3)).all()
    assert (x.asarray().reshape(2, 3) == np.eye(2, 3)).all()
