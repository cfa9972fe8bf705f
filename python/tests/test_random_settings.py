"""cntk.io reading under random combinations of MinibatchSource's settings (a fixed seed, so the same
combinations every run; CNTKIO_RANDOM_ROUNDS=n runs more): randomization (none, windows in chunks or samples,
seeds), frame mode, truncation, a corpus of one to four files (chunks never span files), minibatch sizes
(fixed or changing from call to call), one to three data partitions, max_sweeps or max_samples. Each
combination must read the same minibatches again, with or without the multithreaded deserializer, and from
the same data in a Python-defined deserializer (UserDeserializer); continue exactly after a checkpoint
restore at any minibatch; and over one sweep deliver every sequence (every sample in frame mode) once across
the partitions."""

import os
import random

import numpy as np
import pytest
import scipy.sparse

import cntkio

ROUNDS = int(os.environ.get("CNTKIO_RANDOM_ROUNDS", "30"))  # more: CNTKIO_RANDOM_ROUNDS=1000
SEED = 2026


def write_shards(tmp_path, shards, sequences_per_shard, max_rows, label_every_row):
    """CTF files whose sequence ids run on from file to file: |f holds (id, row), |l a one-hot label. Returns
    the files, the sequence count, the sample count and per file its sequences' (id, rows)."""
    rng = random.Random(shards * 1000 + max_rows)
    files, samples, next_id, layout = [], 0, 0, []
    for k in range(shards):
        path = tmp_path / ("shard%d_%d_%d.ctf" % (k, max_rows, int(label_every_row)))
        layout.append([])
        with open(path, "w") as out:
            for _ in range(sequences_per_shard):
                rows = rng.randint(1, max_rows)
                for r in range(rows):
                    label = " |l %d:1" % (next_id % 5) if r == 0 or label_every_row else ""
                    out.write("%d |f %d %d%s\n" % (next_id, next_id, r, label))
                layout[-1].append((next_id, rows))
                samples += rows
                next_id += 1
        files.append(str(path))
    return files, next_id, samples, layout


class SameDataInPython(cntkio.UserDeserializer):
    """The data of write_shards from Python, one chunk per file (as the CTF reader chunks these small files)."""

    def __init__(self, layout, label_every_row):
        super().__init__()
        self.layout, self.label_every_row = layout, label_every_row

    def stream_infos(self):
        return [cntkio.StreamInformation("features", 0, "dense", np.float32, (2,)),
                cntkio.StreamInformation("labels", 1, "sparse", np.float32, (5,))]

    def num_chunks(self):
        return len(self.layout)

    def get_chunk(self, chunk_id):
        features, labels = [], []
        for i, rows in self.layout[chunk_id]:
            features.append(np.stack([np.full(rows, i, np.float32), np.arange(rows, dtype=np.float32)], axis=1))
            n = rows if self.label_every_row else 1
            labels.append(scipy.sparse.csr_matrix((np.ones(n, np.float32), (np.arange(n), np.full(n, i % 5))),
                                                  shape=(n, 5)))
        return {"features": features, "labels": labels}


def streams():
    return cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2),
                             labels=cntkio.StreamDef(field="l", shape=5, is_sparse=True))


def sequences_of(mb, source):
    """The (id, row) pairs of each sequence of a minibatch."""
    return [tuple((int(v[0]), int(v[1])) for v in s) for s in mb[source.streams.features].as_sequences()]


def read(make, minibatch_size, partitions, index, limit=10_000):
    """Every minibatch of one partition (the i-th asked for minibatch_size(i) samples): the sequences of each,
    and the checkpoint state before each."""
    source = make()
    got, states = [], []
    while len(got) < limit:
        states.append(source.get_checkpoint_state())
        mb = source.next_minibatch(minibatch_size(len(got)), num_data_partitions=partitions, partition_index=index)
        if not mb:
            break
        got.append(sequences_of(mb, source))
    return got, states


@pytest.mark.parametrize("round_number", range(ROUNDS))
def test_random_settings_keep_their_invariants(tmp_path, round_number):
    rng = random.Random(SEED * 100 + round_number)
    packing = rng.choice(["sequences", "frames", "truncated"])
    shards = rng.randint(1, 4)
    files, sequences, samples, layout = write_shards(tmp_path, shards, rng.randint(20, 90),
                                                     1 if packing == "frames" else 6, packing == "truncated")
    kwargs = {}
    if rng.random() < 0.25:
        kwargs["randomize"] = False
    else:
        kwargs["randomization_seed"] = rng.randint(0, 9)
        window = rng.choice(["default", "chunks", "samples"])
        if window == "chunks":
            kwargs["randomization_window_in_chunks"] = rng.randint(1, 3)
        elif window == "samples":
            kwargs["randomization_window_in_samples"] = rng.randint(5, 400)
    if packing == "frames":
        kwargs["frame_mode"] = True
    elif packing == "truncated":
        kwargs["truncation_length"] = rng.randint(1, 5)
    one_sweep = rng.random() < 0.6
    if one_sweep:
        kwargs["max_sweeps"] = 1
    else:
        kwargs["max_samples"] = rng.randint(1, 3 * samples)
    partitions = 1 if packing == "truncated" else rng.randint(1, 3)
    # One size, or sizes that change call by call. Truncated BPTT: sizes that keep the number of slots (with
    # another number CNTK empties the slots, and so does cntkio: docs/differences-from-cntk.md).
    count = rng.choice([1, 7])
    if packing == "truncated":
        length, slots = kwargs["truncation_length"], rng.randint(1, 8)
        sizes = [slots * length + rng.randint(0, length - 1) for _ in range(count)]
    else:
        sizes = [rng.randint(1, 60) for _ in range(count)]

    def minibatch_size(i):
        return sizes[i % len(sizes)]
    threaded = rng.random() < 0.5

    def make(multithreaded=threaded, python=False):
        if python:  # the same data from a Python-defined deserializer
            deserializer = SameDataInPython(layout, packing == "truncated")
        else:
            deserializer = cntkio.CTFDeserializer(files if len(files) > 1 else files[0], streams())
        return cntkio.MinibatchSource(deserializer, multithreaded_deserializer=multithreaded, **kwargs)

    what = "%s %d files %s mb %s partitions %d" % (packing, shards, kwargs, sizes, partitions)
    delivered = []
    for index in range(partitions):
        got, states = read(make, minibatch_size, partitions, index)
        assert read(lambda: make(not threaded), minibatch_size, partitions, index)[0] == got, what
        assert read(lambda: make(python=True), minibatch_size, partitions, index)[0] == got, what + " (Python)"
        cut = rng.randint(0, len(got))
        resumed = make()
        resumed.restore_from_checkpoint(states[cut])
        rest = []
        while True:
            mb = resumed.next_minibatch(minibatch_size(cut + len(rest)), num_data_partitions=partitions,
                                        partition_index=index)
            if not mb:
                break
            rest.append(sequences_of(mb, resumed))
        assert rest == got[cut:], what + " restored before minibatch %d" % cut
        if one_sweep and packing != "truncated":
            # Restored into a reader asked for another minibatch size: the rest of the partition's sweep, once.
            other = rng.randint(1, 60)
            resized = make()
            resized.restore_from_checkpoint(states[cut])
            after = []
            while True:
                mb = resized.next_minibatch(other, num_data_partitions=partitions, partition_index=index)
                if not mb:
                    break
                after += sequences_of(mb, resized)
            before = [s for mb in got[:cut] for s in mb]
            assert sorted(before + after) == sorted(s for mb in got for s in mb), \
                what + " restored before minibatch %d and read in minibatches of %d" % (cut, other)
        delivered += [s for mb in got for s in mb]

    if one_sweep:
        if packing == "truncated":
            assert sum(len(s) for s in delivered) == samples, what
        else:
            ids = [s[0][0] for s in delivered]
            assert sorted(ids) == list(range(sequences)), what
            assert sum(len(s) for s in delivered) == samples, what
