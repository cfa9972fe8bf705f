"""cntkio.torch over Python-defined data: a UserDeserializer (read by the C++ pipeline) and a
UserMinibatchSource / MinibatchSourceFromData (read through their next_minibatch), in process and in
DataLoader workers, with the items a CTF file with the same data gives."""

import functools

import numpy as np
import pytest
import scipy.sparse
import torch

import cntkio
import cntkio.torch
from test_user_deserializer import COUNT, Sequences, ctf, write_ctf


def items(dataset, workers=0, epochs=1):
    out = []
    loader = cntkio.torch.MinibatchLoader(dataset, num_workers=workers) if workers else None
    for _ in range(epochs):
        out.append([{k: v.clone() for k, v in item.items()} for item in (loader if loader is not None else dataset)])
    return out


def assert_same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert sorted(a) == sorted(b)
        for key in b:
            assert torch.equal(a[key], b[key]), key


def ctf_source(path, **kwargs):
    return cntkio.MinibatchSource(ctf(path), **kwargs)


def user_source(**kwargs):
    return cntkio.MinibatchSource(Sequences(COUNT, COUNT), **kwargs)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_user_deserializer_gives_the_items_of_the_ctf_file(tmp_path, workers):
    path = write_ctf(tmp_path / "full.ctf", COUNT)
    for settings in (dict(randomize=False), dict(randomization_seed=4)):
        want = items(cntkio.torch.MinibatchDataset(functools.partial(ctf_source, path, **settings), 9), workers, 2)
        got = items(cntkio.torch.MinibatchDataset(functools.partial(user_source, **settings), 9), workers, 2)
        for a, b in zip(got, want):
            assert_same(sorted(a, key=lambda i: i["x"][0, 0, 0].item()),
                        sorted(b, key=lambda i: i["x"][0, 0, 0].item()))
        assert len(want[0]) > 3


def test_user_deserializer_objects_are_taken_directly():
    dataset = cntkio.torch.MinibatchDataset(Sequences(COUNT, 4), 8)
    got = items(dataset)[0]
    assert sum(int(item["x_lengths"].sum()) for item in got) == sum(1 + i % 4 for i in range(COUNT))


X = np.arange(30, dtype=np.float32).reshape(10, 3)
Y = scipy.sparse.csr_matrix((np.ones(10, np.float32), (np.arange(10), np.arange(10) % 4)), shape=(10, 4))


def from_data():
    return cntkio.MinibatchSourceFromData(dict(x=X, y=Y))


def test_minibatch_source_from_data_in_process_reads_one_sweep_per_epoch():
    dataset = cntkio.torch.MinibatchDataset(from_data, 4, as_indices={"y": -1})
    epochs = items(dataset, epochs=2)
    for got in epochs:
        assert [len(i["x"]) for i in got] == [4, 4, 2]
        np.testing.assert_array_equal(torch.cat([i["x"] for i in got]).numpy(), X)
        np.testing.assert_array_equal(torch.cat([i["y"] for i in got]).numpy(), np.arange(10) % 4)


def test_minibatch_source_from_data_split_across_two_workers():
    got = items(cntkio.torch.MinibatchDataset(from_data, 4), workers=2)[0]
    rows = sorted(int(r[0]) for item in got for r in item["x"].numpy())
    assert rows == list(range(0, 30, 3))  # every row once, over both workers


def test_user_sequences_have_masks_and_lengths():
    seqs = [np.arange(n * 2, dtype=np.float32).reshape(n, 2) for n in (3, 1, 2)]

    def make():
        return cntkio.MinibatchSourceFromData(dict(s=(seqs, cntkio.typing.Sequence[cntkio.typing.tensor])),
                                              max_samples=cntkio.FULL_DATA_SWEEP)

    (item,) = items(cntkio.torch.MinibatchDataset(make, 100))[0]
    assert item["s"].shape == (3, 3, 2)
    assert item["s_lengths"].tolist() == [3, 1, 2]
    assert item["s_mask"].tolist() == [[2, 1, 1], [2, 0, 0], [2, 1, 0]]


def test_a_user_source_object_is_refused_with_advice():
    with pytest.raises(TypeError, match="a function that makes one"):
        cntkio.torch.MinibatchDataset(from_data(), 4)


def test_not_one_hot_in_a_user_source_names_the_position():
    bad = scipy.sparse.csr_matrix(np.array([[1, 0], [0, 2]], np.float32))

    def make():
        return cntkio.MinibatchSourceFromData(dict(y=bad))

    with pytest.raises(ValueError, match="#1 of the minibatch"):
        items(cntkio.torch.MinibatchDataset(make, 4, as_indices={"y": -1}))


def long_sequences():
    seqs = [np.full((7, 2), k, dtype=np.float32) for k in range(4)]
    return cntkio.MinibatchSourceFromData(dict(s=(seqs, cntkio.typing.Sequence[cntkio.typing.tensor])),
                                          max_samples=cntkio.FULL_DATA_SWEEP)


@pytest.mark.parametrize("workers", [2, 3])
def test_a_worker_whose_share_of_a_user_source_minibatch_is_empty_hands_out_nothing(workers):
    # sequences longer than the minibatch: many global minibatches hold nothing for a given worker, which
    # must not reach the training loop as an item of 0 sequences (a NaN loss)
    got = items(cntkio.torch.MinibatchDataset(long_sequences, 3), workers=workers)[0]
    assert got and all(item["s"].shape[0] > 0 for item in got)
    assert sorted(int(item["s"][0, 0, 0]) for item in got) == [0, 1, 2, 3]


def test_spawned_workers_take_the_rank_of_the_process_that_made_them(monkeypatch):
    # a spawned DataLoader worker has no torch.distributed of its own: the dataset carries the rank along
    import pickle
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    dataset = cntkio.torch.MinibatchDataset(from_data, 4, share_index=False)
    pickled = pickle.dumps(dataset)
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    assert pickle.loads(pickled)._places()[:2] == (1, 2)
    assert dataset._places()[:2] == (0, 1)  # the dataset itself still asks each time
