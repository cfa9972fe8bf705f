#!/usr/bin/python3
"""Samples/s through cntkio.torch.MinibatchDataset with a torch DataLoader (2 worker processes) against the
C++ pipeline reading the same data in a C++ loop (cntkio._core.Reader.read_loop: next_minibatch_v2 with no
Python per minibatch), plus single-process Python reading (cntkio.MinibatchSource.next_minibatch).

Data: a generated CTF file (sequences of 1..8 steps, dense `features` and a one-hot sparse `label`), read in
file order (randomize=False), one sweep per measurement, the best of --repeat runs. Target: DataLoader >= 0.8x
the C++ figure.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_throughput.py [--sequences 60000] [--dim 32]
"""

import argparse
import functools
import os
import random
import sys
import tempfile
import time

import torch
from torch.utils.data import DataLoader

import cntkio
import cntkio.torch


def write_data(path, sequences, dim, classes):
    rng = random.Random(1)
    with open(path, "w") as out:
        for s in range(sequences):
            for t in range(1 + s % 8):
                values = " ".join("%.4f" % rng.uniform(-1, 1) for _ in range(dim))
                label = " |label %d:1" % rng.randrange(classes) if t == 0 else ""
                out.write("%d |features %s%s\n" % (s, values, label))


def make_source(path, dim, classes, max_sweeps=cntkio.INFINITELY_REPEAT):
    streams = cntkio.StreamDefs(features=cntkio.StreamDef(field="features", shape=dim),
                                label=cntkio.StreamDef(field="label", shape=classes, is_sparse=True))
    return cntkio.MinibatchSource(cntkio.CTFDeserializer(path, streams), randomize=False, max_sweeps=max_sweeps)


def cpp_loop(path, dim, classes, mb):
    source = make_source(path, dim, classes, max_sweeps=1)
    reader = source._reader
    reader.set_v2_limits(cntkio.INFINITELY_REPEAT, 1)
    _, samples, seconds = reader.read_loop(mb, 1 << 62)
    return samples, seconds


def python_source(path, dim, classes, mb):
    source = make_source(path, dim, classes, max_sweeps=1)
    samples = 0
    start = time.perf_counter()
    while True:
        batch = source.next_minibatch(mb)
        if not batch:
            break
        x = batch[source.streams.features].asarray()
        batch[source.streams.label].asarray()
        samples += batch[source.streams.features].num_samples
    return samples, time.perf_counter() - start


def data_loader(path, dim, classes, mb, workers):
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, path, dim, classes), mb)
    samples = 0
    start = time.perf_counter()
    for batch in DataLoader(dataset, batch_size=None, num_workers=workers):
        samples += int(batch["features_lengths"].sum())
        batch["label"].sum()
    return samples, time.perf_counter() - start


def best(fn, repeat):
    runs = [fn() for _ in range(repeat)]
    samples = {s for s, _ in runs}
    assert len(samples) == 1, "runs read different sample counts: %s" % samples
    return samples.pop(), min(t for _, t in runs)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=60000)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--minibatch-size", type=int, default=2048)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.ctf")
        write_data(path, args.sequences, args.dim, args.classes)
        size_mb = os.path.getsize(path) / 1e6
        common = (path, args.dim, args.classes, args.minibatch_size)
        cpp_loop(*common)  # warm the page cache
        samples, cpp = best(lambda: cpp_loop(*common), args.repeat)
        py_samples, py = best(lambda: python_source(*common), args.repeat)
        dl_samples, dl = best(lambda: data_loader(*common, args.workers), args.repeat)
    assert samples == py_samples == dl_samples, (samples, py_samples, dl_samples)
    print("data: %d sequences, %d samples, %.1f MB CTF (dense dim %d, sparse dim %d), minibatch %d samples" % (
        args.sequences, samples, size_mb, args.dim, args.classes, args.minibatch_size))
    rows = [("C++ loop (next_minibatch_v2, no Python)", cpp),
            ("Python MinibatchSource.next_minibatch + arrays", py),
            ("torch DataLoader, %d workers, MinibatchDataset" % args.workers, dl)]
    for name, seconds in rows:
        print("%-52s %10.0f samples/s  %6.3f s  %.2fx C++" % (name, samples / seconds, seconds, cpp / seconds))
    ratio = cpp / dl
    print("DataLoader / C++ = %.2f (target >= 0.8): %s" % (ratio, "met" if ratio >= 0.8 else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
