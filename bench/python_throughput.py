#!/usr/bin/python3
"""Samples/s through cntkio.torch.MinibatchDataset with a torch DataLoader (2 worker processes) against the
C++ figure of `cntkio bench` for the same data and reader config.

Data: a generated CTF file (sequences of 1..8 steps, a dense `features` stream and a one-hot sparse `label`)
and a composite reader config over it (8 MiB chunks, so that randomized workers own whole chunks each), read
for one sweep (the DataLoader: one epoch). Rows:

  cntkio bench                C++ CLI, cntk.io (v2) reading, one process       <- the reference figure
  C++ loop in the module      the same reading through cntkio._core (no Python per minibatch)
  MinibatchSource             Python next_minibatch + NumPy/SciPy arrays, one process
  DataLoader, N workers       MinibatchDataset: world_size x N partitions, tensors sent to the main process

Best of --repeat runs each. Target: DataLoader >= 0.8x cntkio bench (randomized reading; in file order every
partition must parse every chunk, since CNTK deals sequences round-robin, so that row is shown for
information).

    PYTHONPATH=build/python /usr/bin/python3 bench/python_throughput.py [--cli build/cntkio] [--sequences 120000]
"""

import argparse
import functools
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import torch
from torch.utils.data import DataLoader

import cntkio
import cntkio.torch

HERE = os.path.dirname(os.path.abspath(__file__))


def write_data(path, sequences, dim, classes):
    rng = random.Random(1)
    with open(path, "w") as out:
        for s in range(sequences):
            for t in range(1 + s % 8):
                values = " ".join("%.4f" % rng.uniform(-1, 1) for _ in range(dim))
                label = " |label %d:1" % rng.randrange(classes) if t == 0 else ""
                out.write("%d |features %s%s\n" % (s, values, label))


def write_config(path, data, dim, classes, chunk_bytes):
    with open(path, "w") as out:
        for name, randomize in (("Random", "true"), ("FileOrder", "false")):
            out.write('%s = [ reader = [\n randomize = %s\n deserializers = ( [\n  type = CNTKTextFormatDeserializer\n'
                      '  file = "%s"\n  chunkSizeInBytes = %d\n  input = [ features = [ dim = %d ; format = dense ]\n'
                      '   label = [ dim = %d ; format = sparse ] ]\n ] ) ] ]\n'
                      % (name, randomize, data, chunk_bytes, dim, classes))


def source(config, section, max_sweeps=cntkio.INFINITELY_REPEAT):
    return cntkio.MinibatchSource.from_config(config, section, max_sweeps=max_sweeps)


def cli_bench(cli, config, section, mb):
    out = subprocess.run([cli, "bench", "--config", config, "--section", section, "--sweeps", "1", "--mb-size",
                          str(mb), "--json"], capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["samples"], r["seconds"]


def cpp_loop(config, section, mb):
    reader = source(config, section, max_sweeps=1)._reader
    reader.set_v2_limits(cntkio.INFINITELY_REPEAT, 1)
    _, samples, seconds = reader.read_loop(mb, 1 << 62)
    return samples, seconds


def python_source(config, section, mb):
    s = source(config, section, max_sweeps=1)
    samples = 0
    start = time.perf_counter()
    while True:
        batch = s.next_minibatch(mb)
        if not batch:
            break
        batch[s.streams.features].asarray()
        batch[s.streams.label].asarray()
        samples += batch[s.streams.features].num_samples
    return samples, time.perf_counter() - start


def data_loader(config, section, mb, workers):
    dataset = cntkio.torch.MinibatchDataset(functools.partial(source, config, section), mb)
    samples = 0
    start = time.perf_counter()
    for batch in DataLoader(dataset, batch_size=None, num_workers=workers):
        samples += int(batch["features_lengths"].sum())
    return samples, time.perf_counter() - start


def best(fn, repeat):
    runs = [fn() for _ in range(repeat)]
    return max(s for s, _ in runs), min(t for _, t in runs), {s for s, _ in runs}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default=os.path.join(HERE, "..", "build", "cntkio"), help="the cntkio binary")
    parser.add_argument("--sequences", type=int, default=120000)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--chunk-mib", type=int, default=8)
    parser.add_argument("--minibatch-size", type=int, default=4096)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    mb = args.minibatch_size
    with tempfile.TemporaryDirectory() as tmp:
        data, config = os.path.join(tmp, "bench.ctf"), os.path.join(tmp, "bench.cntk")
        write_data(data, args.sequences, args.dim, args.classes)
        write_config(config, data, args.dim, args.classes, args.chunk_mib << 20)
        print("data: %d sequences, %.1f MB CTF (dense dim %d, sparse dim %d), %d MiB chunks, minibatch %d samples, "
              "%d cores, load average %.1f" % (args.sequences, os.path.getsize(data) / 1e6, args.dim, args.classes,
                                               args.chunk_mib, mb, os.cpu_count(), os.getloadavg()[0]))
        cpp_loop(config, "Random", mb)  # warm the page cache
        verdict = None
        for section in ("Random", "FileOrder"):
            rows = [("cntkio bench (C++ CLI)", best(lambda: cli_bench(args.cli, config, section, mb), args.repeat)),
                    ("C++ loop in cntkio._core", best(lambda: cpp_loop(config, section, mb), args.repeat)),
                    ("MinibatchSource.next_minibatch + arrays", best(lambda: python_source(config, section, mb),
                                                                     args.repeat)),
                    ("torch DataLoader, %d workers" % args.workers,
                     best(lambda: data_loader(config, section, mb, args.workers), args.repeat))]
            counts = set().union(*(r[2] for _, r in rows))
            assert len(counts) == 1, "the rows read different sample counts: %s" % counts
            samples = counts.pop()
            reference = rows[0][1][1]
            print("%s reading, %d samples:" % ("randomized" if section == "Random" else "file-order", samples))
            for name, (_, seconds, _) in rows:
                print("  %-42s %10.0f samples/s  %6.3f s  %.2fx" % (name, samples / seconds, seconds,
                                                                     reference / seconds))
            if section == "Random":
                verdict = reference / rows[-1][1][1]
        print("DataLoader / cntkio bench (randomized) = %.2f (target >= 0.8): %s" %
              (verdict, "met" if verdict >= 0.8 else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
