"""UserMinibatchSource and MinibatchSourceFromData with cntk.io 2.7's semantics (and the docstring examples)."""

import doctest

import numpy as np
import pytest
import scipy.sparse

import cntkio
import cntkio._user_source
from cntkio.typing import Sequence, SparseTensor, Tensor, tensor


def test_docstring_examples_run():
    failures, tried = doctest.testmod(cntkio._user_source, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert tried > 20 and failures == 0


def rows(mb, name):
    return mb[name].asarray().tolist()


def test_reads_in_order_counts_samples_and_wraps_around():
    X = np.arange(10, dtype=np.float32).reshape(5, 2)
    s = cntkio.MinibatchSourceFromData(dict(x=X))
    info = s.streams.x
    assert info == s["x"] == s.stream_info("x") and info.shape == (2,) and info.dtype == np.float32
    assert not info.is_sparse and s.stream_infos() == [info]
    mb = s.next_minibatch(2)
    assert rows(mb, "x") == [[0, 1], [2, 3]] and mb[info].num_sequences == 2 and mb[info].num_samples == 2
    assert not mb[info].end_of_sweep and mb[info].data.mask is None
    mb = s.next_minibatch(4)
    assert rows(mb, "x") == [[4, 5], [6, 7], [8, 9]] and mb[info].end_of_sweep  # the end: 3, not 4
    assert rows(s.next_minibatch(1), "x") == [[0, 1]]  # starts over
    assert s.get_checkpoint_state() == {"cursor": 1, "total_num_samples": 6}
    assert not s.is_infinite()  # cntk.io's MinibatchSourceFromData does not override it


def test_max_samples_ends_reading_exactly():
    s = cntkio.MinibatchSourceFromData(dict(x=np.arange(5.0)[:, None]), max_samples=7)
    sizes = []
    while True:
        mb = s.next_minibatch(3)
        if not mb:
            break
        sizes.append((mb["x"].num_samples, mb["x"].end_of_sweep))
    assert sizes == [(3, False), (2, True), (2, True)]  # 7 samples over the wrap-around; the last ends it
    assert s.next_minibatch(3) == {}


def test_full_data_sweep_reads_the_data_once():
    s = cntkio.MinibatchSourceFromData(dict(x=np.arange(5.0)[:, None]), max_samples=cntkio.FULL_DATA_SWEEP)
    assert [mb["x"].num_samples for mb in iter(lambda: s.next_minibatch(2), {})] == [2, 2, 1]


def test_sequences_count_the_longest_stream_and_a_long_sequence_still_comes():
    xs = [np.ones((n, 3), np.float32) * i for i, n in enumerate([2, 5, 1, 1])]
    ys = [np.full((1, 1), i, np.float32) for i in range(4)]  # one label per sequence
    s = cntkio.MinibatchSourceFromData(dict(x=(xs, Sequence[Tensor[3]]), y=(ys, Sequence[tensor])))
    mb = s.next_minibatch(3)
    assert mb["x"].num_sequences == 1 and mb["x"].num_samples == 2 and mb["y"].num_samples == 1
    mb = s.next_minibatch(3)  # a sequence of 5 samples, longer than the minibatch: delivered alone
    assert mb["x"].shape == (1, 5, 3) and mb["x"].num_samples == 5
    mb = s.next_minibatch(3)
    assert mb["x"].shape == (2, 1, 3) and mb["x"].end_of_sweep
    assert [q.tolist() for q in mb["y"].as_sequences()] == [[[2]], [[3]]]
    assert s.get_checkpoint_state() == {"cursor": 0, "total_num_samples": 9}


def test_sparse_sequences_are_one_csr_row_per_sample():
    ys = [scipy.sparse.csr_matrix(np.eye(3, dtype=np.float32)[:n]) for n in (3, 2)]
    s = cntkio.MinibatchSourceFromData(dict(y=(ys, Sequence[SparseTensor[3]])))
    assert s.streams.y.is_sparse and s.streams.y.shape == (3,)
    mb = s.next_minibatch(10)
    assert mb["y"].shape == (2, 3, 3) and mb["y"].asarray().shape == (5, 3)
    assert mb["y"].mask.tolist() == [[2, 1, 1], [2, 1, 0]]


def test_workers_read_disjoint_shares_of_each_minibatch():
    X = np.arange(7, dtype=np.float32)[:, None]
    Y = scipy.sparse.csr_matrix(np.eye(7, dtype=np.float32))
    sources = [cntkio.MinibatchSourceFromData(dict(x=X, y=Y), max_samples=7) for _ in range(2)]
    seen = []
    for _ in range(3):
        for rank, s in enumerate(sources):
            mb = s.next_minibatch(3, 2, rank)
            if mb:
                got = [r[0] for r in rows(mb, "x")]
                assert mb["y"].asarray().toarray().argmax(1).tolist() == got
                assert mb["x"].num_sequences == len(got) == mb["x"].num_samples
                seen += got
    assert sorted(seen) == list(range(7))  # each item once (cntk.io read an item twice when 3 % 2 != 0)


def test_a_worker_with_no_item_in_a_minibatch_gets_empty_data():
    s = cntkio.MinibatchSourceFromData(dict(x=([np.ones((2, 1))], Sequence[tensor])), max_samples=2)
    mb = s.next_minibatch(5, 2, 1)
    assert mb["x"].num_sequences == 0 and mb["x"].shape == (0, 0, 1) and mb["x"].as_sequences() == []


def test_checkpoint_restores_the_position():
    X = np.arange(6, dtype=np.float32)[:, None]
    s = cntkio.MinibatchSourceFromData(dict(x=X), max_samples=5)
    s.next_minibatch(2)
    state = s.get_checkpoint_state()
    rest = [rows(mb, "x") for mb in iter(lambda: s.next_minibatch(2), {})]
    t = cntkio.MinibatchSourceFromData(dict(x=X), max_samples=5)
    t.restore_from_checkpoint(state)
    assert [rows(mb, "x") for mb in iter(lambda: t.next_minibatch(2), {})] == rest == [[[2], [3]], [[4]]]
    t.current_position = {"cursor": 5, "total_num_samples": 0}
    assert rows(t.next_minibatch(1), "x") == [[5]]


@pytest.mark.parametrize("streams, error", [
    ({}, ValueError),
    (dict(x=np.zeros((0, 2))), ValueError),
    (dict(x=np.zeros((2, 2)), y=np.zeros((3, 2))), TypeError),
    (dict(x=[np.zeros((2, 2))]), TypeError),
    (dict(x=(np.zeros((2, 2)), "tensor")), ValueError),
    (dict(x=(np.zeros((2, 2)), Tensor[3])), ValueError),
    (dict(x=(np.zeros((2, 2)), SparseTensor[2])), ValueError),
    (dict(x=([np.zeros(2), scipy.sparse.csr_matrix(np.zeros((1, 2)))], Sequence[tensor])), TypeError),
    (dict(x="text"), TypeError),
])
def test_bad_data_is_an_error(streams, error):
    with pytest.raises(error):
        cntkio.MinibatchSourceFromData(streams)


def test_bad_reads_are_errors():
    s = cntkio.MinibatchSourceFromData(dict(x=np.zeros((2, 2))))
    for args in [(0,), (2, 2, 2), (2, 0, 0)]:
        with pytest.raises(ValueError):
            s.next_minibatch(*args)
    with pytest.warns(cntkio.DeviceIgnoredWarning):
        s.next_minibatch(1, device="cuda")


class Counter(cntkio.UserMinibatchSource):
    """A user source as in cntk.io's tests: sequences 0, 1, 2, ... of one value each."""

    def __init__(self):
        self.info = cntkio.StreamInformation("n", 0, "dense", np.float32, (1,))
        self.next = 0
        super().__init__()

    def stream_infos(self):
        return [self.info]

    def next_minibatch(self, num_samples, number_of_workers=1, worker_rank=0, device=None):
        values = np.arange(self.next, self.next + num_samples, dtype=np.float32)[:, None]
        self.next += num_samples
        return {self.info: cntkio.MinibatchData(cntkio.Value(values), num_samples, num_samples, False)}

    def get_checkpoint_state(self):
        return {"next": self.next}

    def restore_from_checkpoint(self, state):
        self.next = state["next"]


def test_a_user_source_has_cntk_io_s_surface():
    source = Counter()
    assert source.streams.n is source.info and source["n"] is source.info and source.stream_info("n") is source.info
    assert source.next_minibatch(3, 1, 0)[source.streams.n].asarray().ravel().tolist() == [0, 1, 2]
    state = source.get_checkpoint_state()
    source.next_minibatch(2, 1, 0)
    source.restore_from_checkpoint(state)
    assert source.current_position == {"next": 3} and not source.is_infinite()
    with pytest.raises(ValueError, match="no stream named 'm'"):
        source.stream_info("m")


def test_the_base_class_asks_for_what_is_missing():
    class Empty(cntkio.UserMinibatchSource):
        def stream_infos(self):
            return [cntkio.StreamInformation("a", 0, "dense", np.float32, (1,))]

    source = Empty()
    with pytest.raises(NotImplementedError):
        source.next_minibatch(1, 1, 0)
    assert source.get_checkpoint_state() == {}
    source.restore_from_checkpoint({})
    with pytest.raises(NotImplementedError):
        source.restore_from_checkpoint({"position": 1})
    with pytest.raises(NotImplementedError):
        cntkio.UserMinibatchSource()

    class Wrong(cntkio.UserMinibatchSource):
        def stream_infos(self):
            return ["a"]

    with pytest.raises(TypeError):
        Wrong()


def test_typing_types():
    assert repr(Sequence[tensor]) == "Sequence[tensor]" and Tensor[2, 3].shape == (2, 3)
    assert SparseTensor[5].is_sparse and Sequence[SparseTensor[5]].is_sequence
    with pytest.raises(TypeError):
        Sequence[Sequence[tensor]]
    with pytest.raises(ValueError):
        Tensor[-1]


CTF_SPARSE = ("0\t|x 560:1\t|y 1 0 0 0 0\n0\t|x 0:1\n0\t|x 0:1\n"
              "1\t|x 560:1\t|y 0 1 0 0 0\n1\t|x 0:1\n1\t|x 0:1\n1\t|x 424:1\n")


class SparseTextSource(cntkio.UserMinibatchSource):
    """Reads CTF_SPARSE itself (word indices, one label per sequence) as cntk.io's test of user sources did."""

    def __init__(self):
        self.fsi = cntkio.StreamInformation("features", 0, "sparse", np.float32, (1000,))
        self.lsi = cntkio.StreamInformation("labels", 1, "dense", np.float32, (5,))
        self.sequences = []
        for line in CTF_SPARSE.splitlines():
            key, *fields = line.split("|")
            if not self.sequences or self.sequences[-1][0] != key.strip():
                self.sequences.append((key.strip(), [], None))
            words, label = self.sequences[-1][1], self.sequences[-1][2]
            for field in fields:
                name, values = field.split(" ", 1)
                if name == "x":
                    words.append(int(values.split(":")[0]))
                else:
                    label = np.array([values.split()], np.float32)
            self.sequences[-1] = (key.strip(), words, label)
        self.next = 0
        super().__init__()

    def stream_infos(self):
        return [self.fsi, self.lsi]

    def next_minibatch(self, num_samples, number_of_workers=1, worker_rank=0, device=None):
        words, labels, count, sweep_end = [], [], 0, False
        while True:
            if self.next == len(self.sequences):
                sweep_end, self.next = True, 0
            _, w, label = self.sequences[self.next]
            if words and count + len(w) > num_samples:
                break
            words.append(w)
            labels.append(label)
            count += len(w)
            self.next += 1
        return {self.fsi: cntkio.MinibatchData(cntkio.Value.one_hot(words, 1000), len(words), count, sweep_end),
                self.lsi: cntkio.MinibatchData(cntkio.Value(np.asarray(labels)), len(words), len(words), sweep_end)}


def test_a_user_source_delivers_what_the_reader_does(tmp_path):
    path = tmp_path / "sparse.ctf"
    path.write_text(CTF_SPARSE)
    reader = cntkio.MinibatchSource(cntkio.CTFDeserializer(str(path), cntkio.StreamDefs(
        features=cntkio.StreamDef(field="x", shape=1000, is_sparse=True),
        labels=cntkio.StreamDef(field="y", shape=5))), randomize=False)
    user = SparseTextSource()
    for size in (2, 10):
        n, u = reader.next_minibatch(size), user.next_minibatch(size)
        nf, uf, nl, ul = n[reader["features"]], u[user["features"]], n[reader["labels"]], u[user["labels"]]
        assert uf.shape == nf.shape and ul.shape == nl.shape
        assert (uf.num_sequences, uf.num_samples, uf.is_sparse) == (nf.num_sequences, nf.num_samples, True)
        assert (uf.asarray() != nf.asarray()).nnz == 0 and np.array_equal(ul.asarray(), nl.asarray())
        assert uf.mask.tolist() == nf.mask.tolist()
    assert uf.shape == (2, 4, 1000) and uf.end_of_sweep  # sequences 1 and 0 again: the sweep ended in it


def test_one_hot_skip_and_errors():
    value = cntkio.Value.one_hot([[1, cntkio.Value.ONE_HOT_SKIP, 5], [4]], 6)
    assert value.shape == (2, 3, 6) and value.asarray().toarray().tolist() == [
        [0, 1, 0, 0, 0, 0], [0] * 6, [0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 1, 0]]
    with pytest.raises(ValueError):
        cntkio.Value.one_hot([[6]], 6)
    with pytest.raises(ValueError):
        cntkio.Value.one_hot([[1, 2]], (2, 6))
