"""cntkio.torch conveniences and the MinibatchLoader fast path: datasets made from deserializer objects, a dict
or a ReaderSpec; sparse one-hot streams as class indices; items sent several at a time by workers."""

import functools
import multiprocessing
import pickle

import pytest
import torch

import cntkio
import cntkio.torch
from conftest import write_ctf

N = 90
LENGTHS = [1 + i % 4 for i in range(N)]


def streams():
    return cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2),
                             labels=cntkio.StreamDef(field="l", shape=5, is_sparse=True))


@pytest.fixture
def data(tmp_path):
    return write_ctf(tmp_path / "t.ctf", LENGTHS)


def make_source(path, randomize=False):
    return cntkio.MinibatchSource(cntkio.CTFDeserializer(path, streams()), randomize=randomize)


def ids(items):
    return [[int(i) for i in item["features"][:, 0, 0]] for item in items]


def same_items(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert list(a) == list(b)
        for key in b:
            assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
            assert torch.equal(a[key], b[key]), key


def test_a_dataset_takes_deserializer_objects_a_dict_or_a_reader_spec(data):
    want = list(cntkio.torch.MinibatchDataset(functools.partial(make_source, data), 10))
    assert len(want) > 5
    deserializer = cntkio.CTFDeserializer(data, streams())
    spec = make_source(data)._spec
    for source in (deserializer, [deserializer],
                   {"deserializers": deserializer, "randomize": False}, spec):
        randomized = not isinstance(source, dict) and source is not spec  # MinibatchSource's default
        dataset = cntkio.torch.MinibatchDataset(source, 10)
        got = list(dataset)
        if randomized:  # the defaults of MinibatchSource: randomized, as cntk.io reads
            reference = cntkio.torch.MinibatchDataset(functools.partial(make_source, data, True), 10)
            same_items(got, list(reference))
        else:
            same_items(got, want)
    # A spec of a randomized source reads as that source does.
    random_spec = make_source(data, randomize=True)._spec
    same_items(list(cntkio.torch.MinibatchDataset(random_spec, 10)),
               list(cntkio.torch.MinibatchDataset(functools.partial(make_source, data, True), 10)))


def test_a_dataset_of_deserializers_pickles_and_reads_in_spawned_workers(data):
    deserializer = cntkio.CTFDeserializer(data, streams())
    dataset = cntkio.torch.MinibatchDataset(deserializer, 10)
    copy = pickle.loads(pickle.dumps(dataset))
    same_items(list(copy), list(cntkio.torch.MinibatchDataset(deserializer, 10)))
    loader = torch.utils.data.DataLoader(cntkio.torch.MinibatchDataset([deserializer], 10), batch_size=None,
                                         num_workers=2, multiprocessing_context=multiprocessing.get_context("spawn"))
    assert sorted(i for item in ids(loader) for i in item) == list(range(N))
    # Spawned workers sent segments of their own; forget them (they are gone) so that tests after this one
    # that count such segments start from none.
    cntkio.torch._forget_exited_workers((0, 0))
    assert not cntkio.torch._segments


def test_a_dataset_over_a_reader_spec_refuses_to_pickle(data):
    dataset = cntkio.torch.MinibatchDataset(make_source(data)._spec, 10)
    with pytest.raises(TypeError, match="ReaderSpec cannot be pickled"):
        pickle.dumps(dataset)


@pytest.mark.parametrize("bad,match", [
    (42, "needs deserializer objects"),
    ([], "list of cntkio deserializer objects"),
    (["x.ctf"], "list of cntkio deserializer objects"),
])
def test_a_dataset_refuses_what_is_no_source(bad, match):
    with pytest.raises(TypeError, match=match):
        cntkio.torch.MinibatchDataset(bad, 10)


def test_a_dataset_refuses_a_minibatch_source_object(data):
    with pytest.raises(TypeError, match="makes its own sources"):
        cntkio.torch.MinibatchDataset(make_source(data), 10)


def write_one_hot(path, lengths, labels_of):
    """Sequence i of lengths[i] steps: |f i t and |l with the one-hot index labels_of(i, t) (a string: the
    whole |l field)."""
    with open(path, "w") as out:
        for i, n in enumerate(lengths):
            for t in range(n):
                out.write("%d |f %d %d |l %s\n" % (i, i, t, labels_of(i, t)))
    return str(path)


@pytest.mark.parametrize("pad", [-100, -1, 0])
def test_one_hot_streams_come_as_class_indices_with_padding(tmp_path, pad):
    path = write_one_hot(tmp_path / "o.ctf", LENGTHS, lambda i, t: "%d:1" % ((i + t) % 5))
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, path), 10, as_indices={"labels": pad})
    items = list(dataset)
    assert len(items) > 5
    for item in items:
        assert "labels_values" not in item and "features_values" not in item
        labels, mask = item["labels"], item["labels_mask"]
        assert labels.dtype == torch.int64 and labels.shape == mask.shape
        for row, (seq, n) in enumerate(zip(item["features"][:, 0, 0].long().tolist(), item["labels_lengths"])):
            assert labels[row, :n].tolist() == [(seq + t) % 5 for t in range(n)]
            assert labels[row, n:].tolist() == [pad] * (labels.shape[1] - n)
    # the same through worker processes and MinibatchLoader, split by chunks (each partition's items as read in
    # process) and by minibatches (the items of one process)
    factory = functools.partial(make_source, path)
    sent = list(cntkio.torch.MinibatchLoader(cntkio.torch.MinibatchDataset(factory, 10, as_indices={"labels": pad},
                                                                           worker_split="chunks"), num_workers=2))
    by_first = {int(item["features"][0, 0, 0]): item for p in range(2) for item in
                cntkio.torch.MinibatchDataset(factory, 10, rank=p, world_size=2, as_indices={"labels": pad})}
    same_items(sent, [by_first.pop(int(item["features"][0, 0, 0])) for item in sent])
    assert not by_first
    dataset = cntkio.torch.MinibatchDataset(factory, 10, as_indices={"labels": pad}, worker_split="minibatches")
    same_items(list(cntkio.torch.MinibatchLoader(dataset, num_workers=2)), items)


def test_class_indices_in_frame_mode_have_one_per_sample(tmp_path):
    path = write_one_hot(tmp_path / "o.ctf", [1] * 20, lambda i, t: "%d:1" % (i % 5))
    source = functools.partial(cntkio.MinibatchSource, cntkio.CTFDeserializer(path, streams()), randomize=False,
                               frame_mode=True)
    item = next(iter(cntkio.torch.MinibatchDataset(source, 8, as_indices={"labels": -100})))
    assert item["labels"].tolist() == [i % 5 for i in range(8)] and "labels_values" not in item


@pytest.mark.parametrize("labels,what", [
    (lambda i, t: "2:1 3:1" if i == 7 and t == 1 else "%d:1" % (i % 5), "two indices"),
    (lambda i, t: "2:0.5" if i == 7 and t == 1 else "%d:1" % (i % 5), "a value other than 1"),
    (lambda i, t: "" if i == 7 and t == 1 else "%d:1" % (i % 5), "no index"),
])
def test_a_sample_that_is_not_one_hot_fails_naming_the_stream_and_sequence(tmp_path, labels, what):
    path = write_one_hot(tmp_path / "o.ctf", LENGTHS, labels)
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, path), 10, as_indices={"labels": -1})
    with pytest.raises(ValueError, match=r"sample at step 1 of sequence '7' in stream 'labels' is not one-hot"):
        list(dataset)


def test_as_indices_arguments_are_checked(data):
    source = functools.partial(make_source, data)
    with pytest.raises(ValueError, match="as_indices needs sparse='indices'"):
        cntkio.torch.MinibatchDataset(source, 10, sparse="dense", as_indices={"labels": -1})
    with pytest.raises(TypeError, match="must be a dict"):
        cntkio.torch.MinibatchDataset(source, 10, as_indices=["labels"])
    with pytest.raises(TypeError, match="must be an int"):
        cntkio.torch.MinibatchDataset(source, 10, as_indices={"labels": 0.5})
    with pytest.raises(ValueError, match="stream 'nothing', which the source does not have"):
        cntkio.torch.MinibatchDataset(source, 10, as_indices={"nothing": -1})
    with pytest.raises(ValueError, match="stream 'features', which is dense"):
        cntkio.torch.MinibatchDataset(source, 10, as_indices={"features": -1})
    lazy = cntkio.torch.MinibatchDataset(source, 10, as_indices={"nothing": -1}, share_index=False)
    with pytest.raises(ValueError, match="stream 'nothing'"):
        next(iter(lazy))


def small_chunks_source(path):
    """Randomized reading of `path` in chunks of a few sequences (write_small_chunks_config), so that both of two
    partitions get data."""
    return cntkio.MinibatchSource.from_config(path + ".cntk", "r")


def write_small_chunks_config(path):
    with open(path + ".cntk", "w") as out:
        out.write('r = [ reader = [ randomize = true ; randomizationWindow = 2 ; sampleBasedRandomizationWindow = '
                  'false\n deserializers = ( [ type = CNTKTextFormatDeserializer ; file = "%s" ; chunkSizeInBytes '
                  '= 150 ; input = [ features = [ alias = f ; dim = 2 ; format = dense ]\n labels = [ alias = l ; '
                  'dim = 5 ; format = sparse ] ] ] ) ] ]\n' % path)


@pytest.mark.parametrize("persistent", [True, False])
def test_minibatch_loader_workers_deliver_what_the_partitions_read_in_process(data, persistent):
    """MinibatchLoader's workers send several minibatches per DataLoader item; the training loop must still
    get every minibatch of both partitions, each equal to the one read in process, in each partition's
    order, over several epochs with persistent or new workers."""
    write_small_chunks_config(data)
    factory = functools.partial(small_chunks_source, data)
    datasets = [cntkio.torch.MinibatchDataset(factory, 7, rank=p, world_size=2) for p in range(2)]
    expected = [[list(d) for d in datasets] for _ in range(3)]  # per epoch, per partition
    assert all(expected[0]) and expected[0] != expected[1]
    dataset = cntkio.torch.MinibatchDataset(factory, 7)
    loader = cntkio.torch.MinibatchLoader(dataset, num_workers=2, persistent_workers=persistent)
    for epoch in range(3):
        got = list(loader)
        by_partition = [[], []]
        want_first = {p: {int(item["features"][0, 0, 0]) for item in expected[epoch][p]} for p in range(2)}
        for item in got:
            first = int(item["features"][0, 0, 0])
            by_partition[0 if first in want_first[0] else 1].append(item)
        same_items(by_partition[0], expected[epoch][0])
        same_items(by_partition[1], expected[epoch][1])
        # persistent workers or not, a checkpoint taken after the epoch names the next one (resuming it must
        # not give an empty epoch)
        assert dataset.epoch == epoch + 1
        assert dataset.state_dict()["states"] == {}


def test_a_worker_sends_minibatches_in_groups(data):
    factory = functools.partial(make_source, data)
    expected = list(cntkio.torch.MinibatchDataset(factory, 4))
    loader = cntkio.torch.MinibatchLoader(cntkio.torch.MinibatchDataset(factory, 4), num_workers=1)
    sizes = []
    for group in torch.utils.data.DataLoader.__iter__(loader):  # what crossed between the processes
        sizes.append(len(group))
        for item in group:
            assert item.pop(cntkio.torch._STATE_KEY)[:3] == (0, 1, 0)  # partition, partitions, epoch
            same_items([item], [expected.pop(0)])
    assert not expected and max(sizes) == cntkio.torch._GROUP_ITEMS and len(sizes) > 2


def test_minibatch_loader_exposes_the_dataset_state(data):
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, data), 10)
    loader = cntkio.torch.MinibatchLoader(dataset, num_workers=0)
    next(iter(loader))
    assert loader.dataset.state_dict() == dataset.state_dict() and dataset.state_dict()["states"]


def mark(item):
    """A collate_fn that needs one minibatch (a dict)."""
    item["collated"] = torch.ones(1)
    return item


def test_a_collate_fn_of_the_caller_gets_single_minibatches(data):
    factory = functools.partial(make_source, data)
    got = list(cntkio.torch.MinibatchLoader(cntkio.torch.MinibatchDataset(factory, 4), num_workers=1,
                                            collate_fn=mark))
    expected = list(cntkio.torch.MinibatchDataset(factory, 4))
    assert len(got) == len(expected) > cntkio.torch._GROUP_ITEMS
    for item, want in zip(got, expected):
        assert item.pop("collated").tolist() == [1.0]
        same_items([item], [want])
