"""cntkio.torch: DataLoader workers that split a rank's minibatches between them (worker_split): the training loop
gets exactly the minibatches one process reads, with persistent or new workers, randomized or not, and
state_dict/load_state_dict stay exact."""

import functools

import pytest
import torch
from torch.utils.data import DataLoader

import cntkio
import cntkio.torch
from conftest import write_ctf

N = 90
LENGTHS = [1 + i % 4 for i in range(N)]
MB = 4  # samples per minibatch: about 60 minibatches a sweep, several groups of MinibatchLoader per worker


def make_source(path, randomize=True, **kwargs):
    """One chunk (the whole small file)."""
    streams = cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2),
                                labels=cntkio.StreamDef(field="l", shape=5, is_sparse=True))
    return cntkio.MinibatchSource(cntkio.CTFDeserializer(path, streams), randomize=randomize,
                                  randomization_window_in_samples=40 if randomize else 0, **kwargs)


def small_chunks_source(path):
    """Randomized, in chunks of 150 bytes (many chunks): the config the data fixture wrote."""
    return cntkio.MinibatchSource.from_config(path + ".cntk", "r")


def write_small_chunks_config(path):
    with open(path + ".cntk", "w") as out:
        out.write('r = [ reader = [ randomize = true ; randomizationWindow = 2 ; sampleBasedRandomizationWindow = '
                  'false\n deserializers = ( [ type = CNTKTextFormatDeserializer ; file = "%s" ; chunkSizeInBytes '
                  '= 150 ; input = [ features = [ alias = f ; dim = 2 ; format = dense ]\n labels = [ alias = l ; '
                  'dim = 5 ; format = sparse ] ] ] ) ] ]\n' % path)


@pytest.fixture
def data(tmp_path):
    path = write_ctf(tmp_path / "t.ctf", LENGTHS)
    write_small_chunks_config(path)  # once: workers reading it while another writes it would fail
    return path


def first_ids(item):
    return [int(i) for i in item["features"][:, 0, 0]]


def same_items(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert list(a) == list(b)
        for key in b:
            assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
            assert torch.equal(a[key], b[key]), key


def in_process_epochs(factory, epochs, **kwargs):
    dataset = cntkio.torch.MinibatchDataset(factory, MB, **kwargs)
    return [list(dataset) for _ in range(epochs)]


def cntk_io_first_sweep(path, randomize):
    """The first ids of the sequences of each minibatch of sweep 0 as cntk.io reading gives them."""
    source = make_source(path, randomize, max_sweeps=1)
    out = []
    while True:
        mb = source.next_minibatch(MB)
        if not mb:
            return out
        out.append([int(s[0, 0]) for s in mb[source.streams.features].as_sequences()])


def test_worker_split_is_checked(data):
    assert cntkio.torch.MinibatchDataset(functools.partial(make_source, data), MB).worker_split == "chunks"
    with pytest.raises(ValueError, match="worker_split must be 'auto', 'chunks' or 'minibatches'"):
        cntkio.torch.MinibatchDataset(functools.partial(make_source, data), MB, worker_split="sequences")


def test_auto_splits_minibatches_only_when_the_data_has_fewer_chunks_than_workers(data):
    assert cntkio.torch._chunk_count(make_source(data)._reader) == 1
    assert cntkio.torch._chunk_count(small_chunks_source(data)._reader) > 3
    one_chunk = cntkio.torch.MinibatchDataset(functools.partial(make_source, data), MB, worker_split="auto")
    many = cntkio.torch.MinibatchDataset(functools.partial(small_chunks_source, data), MB, worker_split="auto")
    assert one_chunk._splits_minibatches(make_source(data), 2)
    assert not one_chunk._splits_minibatches(make_source(data), 1)
    assert not many._splits_minibatches(small_chunks_source(data), 2)
    forced = cntkio.torch.MinibatchDataset(functools.partial(small_chunks_source, data), MB,
                                           worker_split="minibatches")
    assert forced._splits_minibatches(small_chunks_source(data), 2)
    for split in ("chunks", None):  # None: the default
        kwargs = {"worker_split": split} if split else {}
        kept = cntkio.torch.MinibatchDataset(functools.partial(make_source, data), MB, **kwargs)
        assert not kept._splits_minibatches(make_source(data), 2)


def test_the_chunk_count_is_the_readers_not_a_sum_of_its_description(data, tmp_path):
    # Two files of one chunk each: describe() says "2 chunk(s) in all", then "1 chunk(s)" for each file.
    second = write_ctf(tmp_path / "u.ctf", LENGTHS)
    features = cntkio.StreamDef(field="f", shape=2)
    labels = cntkio.StreamDef(field="l", shape=5, is_sparse=True)

    def two_files():
        return cntkio.MinibatchSource(
            cntkio.CTFDeserializer([data, second], cntkio.StreamDefs(features=features, labels=labels)))

    assert cntkio.torch._chunk_count(two_files()._reader) == 2
    dataset = cntkio.torch.MinibatchDataset(two_files, MB, worker_split="auto")
    assert dataset._splits_minibatches(two_files(), 3)  # 2 chunks for 3 workers: one would read nothing
    assert not dataset._splits_minibatches(two_files(), 2)

    # A composite reader (two deserializers over one file): the first deserializer's chunks, not the sum.
    def composite():
        return cntkio.MinibatchSource([cntkio.CTFDeserializer(data, cntkio.StreamDefs(features=features)),
                                       cntkio.CTFDeserializer(data, cntkio.StreamDefs(labels=labels))])

    assert cntkio.torch._chunk_count(composite()._reader) == 1


@pytest.mark.parametrize("randomize", [True, False])
@pytest.mark.parametrize("persistent", [True, False])
@pytest.mark.parametrize("plain", [False, True])
def test_workers_splitting_minibatches_deliver_the_minibatches_of_one_process(data, randomize, persistent, plain):
    """A one-chunk file read by two workers ("auto" splits it by minibatches): over three epochs the training loop
    gets the minibatches one process reads, in its order, through MinibatchLoader's groups or a plain
    DataLoader's single items."""
    factory = functools.partial(make_source, data, randomize)
    expected = in_process_epochs(factory, 3)
    assert [first_ids(item) for item in expected[0]] == cntk_io_first_sweep(data, randomize)
    assert len(expected[0]) > 3 * cntkio.torch._GROUP_ITEMS
    if randomize:
        assert first_ids(expected[0][0]) != first_ids(expected[1][0])
    dataset = cntkio.torch.MinibatchDataset(factory, MB, worker_split="auto")
    if plain:
        loader = DataLoader(dataset, batch_size=None, num_workers=2, persistent_workers=persistent)
    else:
        loader = cntkio.torch.MinibatchLoader(dataset, num_workers=2, persistent_workers=persistent)
    for epoch in range(3):
        if plain and not persistent:
            dataset.set_epoch(epoch)
        same_items(list(loader), expected[epoch])


@pytest.mark.filterwarnings("ignore:This DataLoader will create 3 worker processes")
@pytest.mark.parametrize("workers", [2, 3])
def test_many_chunks_split_by_minibatches_on_request(data, workers):
    factory = functools.partial(small_chunks_source, data)
    expected = in_process_epochs(factory, 2)
    dataset = cntkio.torch.MinibatchDataset(factory, MB, worker_split="minibatches")
    loader = cntkio.torch.MinibatchLoader(dataset, num_workers=workers, persistent_workers=True)
    for epoch in range(2):
        same_items(list(loader), expected[epoch])


def test_ranks_still_split_while_their_workers_split_minibatches(data):
    factory = functools.partial(make_source, data)
    for rank in range(2):
        expected = list(cntkio.torch.MinibatchDataset(factory, MB, rank=rank, world_size=2))
        dataset = cntkio.torch.MinibatchDataset(factory, MB, rank=rank, world_size=2, worker_split="minibatches")
        same_items(list(cntkio.torch.MinibatchLoader(dataset, num_workers=2)), expected)


@pytest.mark.filterwarnings("ignore:This DataLoader will create 3 worker processes")
@pytest.mark.parametrize("workers_before,workers_after", [(2, 2), (2, 3), (2, 0), (0, 2)])
@pytest.mark.parametrize("stop", [5, 40])
def test_a_state_of_workers_splitting_minibatches_resumes_exactly(data, workers_before, workers_after, stop):
    """A checkpoint taken after `stop` minibatches continues with the next minibatch of the same epoch, with any
    number of workers, and the epoch's minibatches are those of one process."""
    factory = functools.partial(make_source, data)
    expected = in_process_epochs(factory, 2)
    dataset = cntkio.torch.MinibatchDataset(factory, MB, worker_split="minibatches")
    got = []
    for k, item in enumerate(cntkio.torch.MinibatchLoader(dataset, num_workers=workers_before)):
        got.append(item)
        if k + 1 == stop:
            state = dataset.state_dict()
            break
    assert state["epoch"] == 0 and state["num_partitions"] == 1 and list(state["states"]) == [0]
    resumed = cntkio.torch.MinibatchDataset(factory, MB, worker_split="minibatches")
    resumed.load_state_dict(state)
    loader = cntkio.torch.MinibatchLoader(resumed, num_workers=workers_after, persistent_workers=workers_after > 0)
    got += list(loader)
    same_items(got, expected[0])
    same_items(list(loader), expected[1])  # and the next epoch as one process reads it


@pytest.mark.parametrize("split", ["minibatches", "chunks"])
def test_a_group_kept_in_part_stays_intact_while_workers_write_on(data, split):
    """A worker writes a group of minibatches into one shared-memory segment and reuses it only when every
    tensor of the group is gone in the training process: items kept (one of several of a group) must keep
    their values over later epochs, and the workers' segments stay few."""
    factory = functools.partial(small_chunks_source if split == "chunks" else make_source, data)
    dataset = cntkio.torch.MinibatchDataset(factory, MB, worker_split=split)
    loader = cntkio.torch.MinibatchLoader(dataset, num_workers=2, persistent_workers=True)
    kept = []
    for epoch in range(4):
        count = 0
        for k, item in enumerate(loader):
            count += 1
            if k % 7 == 3:
                kept.append((item, {key: tensor.clone() for key, tensor in item.items()}))
        assert count > 2 * cntkio.torch._GROUP_ITEMS
    for item, copy in kept:
        same_items([item], [copy])
    assert len(cntkio.torch._segments) <= 4 * cntkio.torch._MAX_SEGMENTS
