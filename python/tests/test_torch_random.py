"""cntkio.torch under random combinations of its settings (a fixed seed; CNTKIO_RANDOM_ROUNDS=n runs more):
randomization, a corpus of one to three files, minibatch sizes, one or two epochs of one sweep, 0-3 DataLoader
workers (persistent or not, MinibatchLoader or a plain DataLoader), worker_split, sparse delivery, one or two
ranks. Each epoch must deliver every sequence once over the ranks (and their workers' partitions), and where one
process's order is promised (no workers, or workers splitting by minibatches) exactly the rank's items as one
process reads them."""

import functools
import os
import random

import pytest
import torch
from torch.utils.data import DataLoader

import cntkio
import cntkio.torch
from conftest import write_ctf

ROUNDS = int(os.environ.get("CNTKIO_RANDOM_ROUNDS", "8"))


def make_source(files, kwargs):
    streams = cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2),
                                labels=cntkio.StreamDef(field="l", shape=5, is_sparse=True))
    return cntkio.MinibatchSource(cntkio.CTFDeserializer(files if len(files) > 1 else files[0], streams), **kwargs)


def ids_of(item):
    """The sequence ids of an item (the first feature value of each sequence)."""
    return [int(i) for i in item["features"][:, 0, 0]]


def same_items(got, want, what):
    assert len(got) == len(want), what
    for a, b in zip(got, want):
        assert sorted(a) == sorted(b), what
        for key in b:
            assert torch.equal(a[key], b[key]), what + " " + key


@pytest.mark.filterwarnings("ignore:This DataLoader will create 3 worker processes")
@pytest.mark.parametrize("round_number", range(ROUNDS))
def test_random_torch_settings_keep_their_invariants(tmp_path, round_number):
    rng = random.Random(7000 + round_number)
    files, total = [], 0
    for k in range(rng.randint(1, 3)):
        n = rng.randint(15, 60)
        lengths = [1 + (total + i) % 4 for i in range(n)]
        files.append(write_ctf(tmp_path / ("part%d.ctf" % k), lengths, first=total))
        total += n
    kwargs = {"randomize": False} if rng.random() < 0.3 else {"randomization_seed": rng.randint(0, 5)}
    minibatch = rng.randint(2, 30)
    workers = rng.choice([0, 1, 2, 3])
    split = rng.choice(["chunks", "minibatches", "auto"])
    sparse = rng.choice(["indices", "dense"])
    plain = rng.random() < 0.3
    persistent = workers > 0 and rng.random() < 0.5
    what = "%d files %s mb %d workers %d %s %s plain %s persistent %s" % (
        len(files), kwargs, minibatch, workers, split, sparse, plain, persistent)
    factory = functools.partial(make_source, files, kwargs)
    world = rng.choice([1, 1, 2])
    what += " world %d" % world
    chunks = cntkio.torch._chunk_count(make_source(files, kwargs)._reader)
    by_minibatches = split == "minibatches" or (split == "auto" and chunks < workers)
    delivered = [[], []]  # per epoch, over the ranks
    for rank in range(world):
        def dataset():
            return cntkio.torch.MinibatchDataset(factory, minibatch, sparse=sparse, worker_split=split, rank=rank,
                                                 world_size=world)

        one_process = dataset()
        expected = [list(one_process) for _ in range(2)]
        data = dataset()
        if plain:
            loader = DataLoader(data, batch_size=None, num_workers=workers, persistent_workers=persistent)
        else:
            loader = cntkio.torch.MinibatchLoader(data, num_workers=workers, persistent_workers=persistent)
        for epoch in range(2):
            if plain and not persistent and workers > 0:
                data.set_epoch(epoch)  # new worker processes each epoch: they read the epoch set here
            got = list(loader)
            if workers <= 1 or by_minibatches:
                same_items(got, expected[epoch], what + " rank %d epoch %d" % (rank, epoch))
            delivered[epoch] += [i for item in got for i in ids_of(item)]
    for epoch in range(2):
        assert sorted(delivered[epoch]) == list(range(total)), what + " epoch %d" % epoch
