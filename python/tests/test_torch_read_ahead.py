"""cntkio.torch in one process: the reader writes the next group of items on a thread of its own
(Reader.next_torch_items_ahead) while the training loop takes tensors of the last one. What it hands out must be
what next_torch_items hands out, call by call, and nothing read ahead may leak past a restore or an error."""

import functools
import gc

import numpy as np
import pytest
import torch

import cntkio
import cntkio.torch
from conftest import write_ctf

N = 90
LENGTHS = [1 + i % 4 for i in range(N)]
ALIGN = cntkio.torch._ALIGN


def make_source(path, randomize=True):
    streams = cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2),
                                labels=cntkio.StreamDef(field="l", shape=5, is_sparse=True))
    return cntkio.MinibatchSource(cntkio.CTFDeserializer(path, streams), randomize=randomize,
                                  randomization_window_in_samples=40 if randomize else 0)


@pytest.fixture
def data(tmp_path):
    return write_ctf(tmp_path / "t.ctf", LENGTHS)


def reader_of(path, sweeps):
    reader = make_source(path)._reader
    reader.set_v2_limits(cntkio.INFINITELY_REPEAT, sweeps)
    reader.defer_values(True)
    return reader


def tensors(buffer, entries):
    """Every tensor of one item as (key, dtype, shape, bytes)."""
    return [(key, dtype, shape, bytes(np.asarray(buffer)[offset:offset + nbytes]))
            for key, dtype, shape, offset, nbytes in entries]


def plain_groups(reader, count, size):
    """next_torch_items' groups: [(tensors of each item, state, end_of_sweep)] per call, up to an empty one."""
    groups = []
    while True:
        buffer, read = reader.next_torch_items(count, size, 1, 0, False, ALIGN, ALIGN, cntkio.torch._allocate, {},
                                               True)
        if not read:
            return groups
        groups.append([(tensors(buffer, entries), state, end) for entries, state, end in read])


@pytest.mark.parametrize("count,size", [(3, 7), (1, 12), (8, 5), (4, 40)])
def test_groups_read_ahead_equal_the_groups_read_on_request(data, count, size):
    want = plain_groups(reader_of(data, 2), count, size)
    reader = reader_of(data, 2)
    got, exhausted = [], False
    while not exhausted:
        buffer, read, exhausted = reader.next_torch_items_ahead(count, size, 1, 0, False, ALIGN, ALIGN, {})
        assert buffer is not None or not read
        if read:
            got.append([(tensors(buffer, entries), state, end) for entries, state, end in read])
    assert sum(end for group in want for _, _, end in group) == 2  # two sweeps, each end seen once
    assert got == want
    # after the end, still nothing (nothing was read ahead past it)
    assert reader.next_torch_items_ahead(count, size, 1, 0, False, ALIGN, ALIGN, {}) == (None, [], True)


def test_a_restore_drops_the_group_read_ahead(data):
    reader, twin = reader_of(data, 3), reader_of(data, 3)
    _, read, _ = reader.next_torch_items_ahead(4, 6, 1, 0, False, ALIGN, ALIGN, {})
    assert len(read) == 4  # a full group: the next one is being read ahead now
    state = read[1][1]  # after the second minibatch
    reader.restore(state)
    twin.restore(state)
    buffer, read, _ = reader.next_torch_items_ahead(4, 6, 1, 0, False, ALIGN, ALIGN, {})
    twin_buffer, twin_read = twin.next_torch_items(4, 6, 1, 0, False, ALIGN, ALIGN, cntkio.torch._allocate, {}, True)
    assert [(tensors(buffer, e), s) for e, s, _ in read] == [(tensors(twin_buffer, e), s) for e, s, _ in twin_read]


def test_the_reader_state_counts_the_group_read_ahead_and_other_reads_drop_it(data):
    reader = reader_of(data, 3)
    _, first, _ = reader.next_torch_items_ahead(2, 6, 1, 0, False, ALIGN, ALIGN, {})
    twin = reader_of(data, 3)
    twin.next_torch_items(4, 6, 1, 0, False, ALIGN, ALIGN, cntkio.torch._allocate, {}, False)
    assert reader.state() == twin.state()  # like the reader's own read-ahead: the position after it
    # next_v2 drops the group read ahead: it reads the fifth minibatch, as the twin does
    assert reader.next_v2(6, 1, 0).keys == twin.next_v2(6, 1, 0).keys


def test_other_arguments_than_those_of_the_group_read_ahead_are_refused(data):
    reader = reader_of(data, 1)
    reader.next_torch_items_ahead(2, 6, 1, 0, False, ALIGN, ALIGN, {})
    with pytest.raises(RuntimeError, match="other arguments than the group read ahead"):
        reader.next_torch_items_ahead(2, 7, 1, 0, False, ALIGN, ALIGN, {})


def write_one_hot(path, bad_sequence):
    """Sequences as LENGTHS, |f i t and a one-hot |l on every step, except step 1 of `bad_sequence` (two
    indices)."""
    with open(path, "w") as out:
        for i, n in enumerate(LENGTHS):
            for t in range(n):
                label = "1:1 2:1" if (i, t) == (bad_sequence, 1) else "%d:1" % ((i + t) % 5)
                out.write("%d |f %d %d |l %s\n" % (i, i, t, label))
    return str(path)


def test_an_error_in_a_group_read_ahead_is_raised_when_that_group_is_asked_for(tmp_path):
    # Minibatches of 10 samples hold about 4 sequences, a group of 8 minibatches about 32: sequence 81 lies in
    # the third group, which is read ahead while the training loop takes the second one.
    path = write_one_hot(tmp_path / "o.ctf", 81)
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, path, False), 10,
                                            as_indices={"labels": -1})
    seen = []
    with pytest.raises(ValueError, match=r"sample at step 1 of sequence '81' in stream 'labels' is not one-hot"):
        for item in dataset:
            seen += item["features"][:, 0, 0].long().tolist()
    assert seen == list(range(len(seen))) and 32 <= len(seen) < 81  # every group before the bad one, in order


def test_a_reader_dropped_while_it_reads_ahead_and_forks_beside_it_are_safe(data):
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, data), 5)
    iterator = iter(dataset)
    first = next(iterator)  # the next group is being read ahead now
    assert first["features"].shape[0] > 0
    # DataLoader workers forked while the thread reads ahead: they do not use it, and end without waiting for it
    other = cntkio.torch.MinibatchDataset(functools.partial(make_source, data), 5)
    sent = list(cntkio.torch.MinibatchLoader(other, num_workers=2))
    assert sorted(i for item in sent for i in item["features"][:, 0, 0].long().tolist()) == list(range(N))
    del iterator, first, dataset
    gc.collect()
    again = cntkio.torch.MinibatchDataset(functools.partial(make_source, data), 5)
    assert sorted(i for item in again for i in item["features"][:, 0, 0].long().tolist()) == list(range(N))


def test_items_read_ahead_keep_their_values_after_the_next_groups(data):
    """Each group has a buffer of its own: items kept from earlier groups are not overwritten by later ones."""
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, data, False), 6)
    items = list(dataset)
    copies = [{key: tensor.clone() for key, tensor in item.items()} for item in items]
    more = list(dataset)  # the next epoch, more groups
    assert len(more) == len(items)
    for item, copy in zip(items, copies):
        for key in copy:
            assert torch.equal(item[key], copy[key]), key
    assert [i for item in items for i in item["features"][:, 0, 0].long().tolist()] == list(range(N))


@pytest.mark.parametrize("sparse", ["indices", "dense"])
@pytest.mark.parametrize("kind", ["sequence", "frame", "shaped", "double"])
def test_items_made_by_the_module_equal_items_made_from_the_entries(tmp_path, sparse, kind):
    """In one process the module makes the tensors itself (dtype, shape and bytes from its plan); they must
    equal the tensors made in Python from next_torch_items' entries (what DataLoader workers send)."""
    from test_torch import converted_source

    got = list(cntkio.torch.MinibatchDataset(lambda: converted_source(tmp_path, kind), 7, sparse=sparse))
    source = converted_source(tmp_path, kind)
    dataset = cntkio.torch.MinibatchDataset(lambda: source, 7, sparse=sparse)
    source._reader.set_v2_limits(cntkio.INFINITELY_REPEAT, 1)
    source._reader.defer_values(True)
    want = []
    while True:
        buffer, read = source._reader.next_torch_items(4, 7, 1, 0, sparse == "dense", ALIGN, ALIGN,
                                                       cntkio.torch._allocate, {}, False)
        if not read:
            break
        want += dataset._items(buffer, [entries for entries, _, _ in read], source, None)
    assert len(got) == len(want) > 10
    for a, b in zip(got, want):
        assert list(a) == list(b)
        for key, tensor in b.items():
            assert a[key].dtype == tensor.dtype and a[key].shape == tensor.shape, key
            assert torch.equal(a[key], tensor), key
    assert got[0]["features"].dtype == (torch.float64 if kind == "double" else torch.float32)
    assert got[0]["features"].dim() == (2 if kind == "frame" else 4 if kind == "shaped" else 3)


def all_ids(items):
    return [i for item in items for i in item["features"][:, 0, 0].long().tolist()]


def test_an_epoch_read_ahead_at_the_last_ones_end_is_dropped_when_another_position_is_asked_for(data):
    """When an epoch ends, the reader is set to the next epoch and reads its first minibatch; set_epoch and
    load_state_dict to anything else must still read exactly what a fresh dataset reads there."""
    def dataset():
        return cntkio.torch.MinibatchDataset(functools.partial(make_source, data), 6)

    reference = {}
    for epoch in range(3):
        fresh = dataset()
        fresh.set_epoch(epoch)
        reference[epoch] = all_ids(fresh)
    assert reference[0] != reference[1] != reference[2]

    d = dataset()
    assert all_ids(d) == reference[0]
    assert all_ids(d) == reference[1]  # read ahead at epoch 0's end, taken
    d.set_epoch(1)
    assert all_ids(d) == reference[1]  # read ahead for epoch 2, dropped
    d.set_epoch(0)
    assert all_ids(d) == reference[0]

    # a checkpoint taken in epoch 1, loaded after epoch 1 ended (the reader read ahead into epoch 2)
    d = dataset()
    all_ids(d)
    iterator, first = iter(d), []
    for _ in range(4):
        first += next(iterator)["features"][:, 0, 0].long().tolist()
    state = d.state_dict()
    assert first + all_ids(iterator) == reference[1]
    d.load_state_dict(state)
    assert all_ids(d) == reference[1][len(first):]
    assert all_ids(d) == reference[2]


def test_a_group_read_ahead_with_the_count_of_the_call_before_goes_on_reading_ahead(data):
    """The dataset's count grows from 1 to 8 at an epoch's start: a group read ahead with count 1, taken by a call
    that asks for 3, is full, so that call starts the next group (3 minibatches) at once."""
    reader, twin = reader_of(data, 3), reader_of(data, 3)
    assert len(reader.next_torch_items_ahead(1, 6, 1, 0, False, ALIGN, ALIGN, {})[1]) == 1
    assert len(reader.next_torch_items_ahead(3, 6, 1, 0, False, ALIGN, ALIGN, {})[1]) == 1  # the group read ahead
    twin.next_torch_items(5, 6, 1, 0, False, ALIGN, ALIGN, cntkio.torch._allocate, {}, False)
    assert reader.state() == twin.state()  # 1 + 1 handed out, 3 read ahead
