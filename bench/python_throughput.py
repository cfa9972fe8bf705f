#!/usr/bin/python3
"""Samples/s through cntkio.torch.MinibatchDataset with a torch DataLoader (2 worker processes) against the
C++ figure of `cntkio bench` for the same data and reader config.

Data: a generated CTF file (sequences of 1..8 steps, a dense `features` stream and a one-hot sparse `label`)
and a composite reader config over it (8 MiB chunks, so that randomized workers own whole chunks each), read
for one sweep (the DataLoader: one epoch), or --epochs sweeps. Rows:

  cntkio bench                C++ CLI, cntk.io (v2) reading, one process       <- the reference figure
  C++ loop in the module      the same reading through cntkio._core (no Python per minibatch)
  MinibatchSource             Python next_minibatch + NumPy/SciPy arrays, one process
  DataLoader, N workers       MinibatchDataset: world_size x N partitions, tensors sent to the main process
                              (PyTorch's default prefetch_factor, 2)
    the same, prefetch_factor 4   as MinibatchLoader sets it

The rows run interleaved, one of each per repetition (--repeat), so that a change in the machine's load hits
all of them alike. Printed per row: samples/s and seconds of the median run, the best run, CPU seconds (median;
the process and its children, so the DataLoader's workers count, and the CLI's process start-up too, which
`cntkio --version` measures), and the ratio to cntkio bench: the median of the per-repetition ratios of wall
time, and of CPU time. Target: DataLoader >= 0.8x cntkio bench in wall time (randomized reading; in file order
every partition must parse every chunk, since CNTK deals sequences round-robin, so that row is shown for
information). On a machine shared with other work, wall time depends on the share of the cores the rows get;
the CPU ratio does not.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_throughput.py [--cli build/cntkio] [--sequences 120000]
"""

import argparse
import functools
import json
import os
import random
import resource
import statistics
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


def cpu_seconds():
    """CPU time of this process and of its waited-for children (the CLI, the DataLoader's workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def cli_bench(cli, config, section, mb, epochs):
    out = subprocess.run([cli, "bench", "--config", config, "--section", section, "--sweeps", str(epochs), "--mb-size",
                          str(mb), "--json"], capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["samples"], r["seconds"]


def cpp_loop(config, section, mb, epochs):
    reader = source(config, section, max_sweeps=epochs)._reader
    reader.set_v2_limits(cntkio.INFINITELY_REPEAT, epochs)
    _, samples, seconds = reader.read_loop(mb, 1 << 62)
    return samples, seconds


def python_source(config, section, mb, epochs):
    s = source(config, section, max_sweeps=epochs)
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


def data_loader(config, section, mb, workers, epochs, prefetch_factor=2):
    start = time.perf_counter()  # the dataset indexes the data when it is made (share_index)
    dataset = cntkio.torch.MinibatchDataset(functools.partial(source, config, section), mb)
    samples = 0
    loader = DataLoader(dataset, batch_size=None, num_workers=workers, prefetch_factor=prefetch_factor)
    for epoch in range(epochs):  # new worker processes every epoch (the DataLoader's default)
        dataset.set_epoch(epoch)
        for batch in loader:
            samples += int(batch["features_lengths"].sum())
    return samples, time.perf_counter() - start


def cli_start_up(cli):
    """CPU seconds of `cntkio --version`: what starting the CLI process costs."""
    cpu = cpu_seconds()
    subprocess.run([cli, "--version"], capture_output=True, check=True)
    return cpu_seconds() - cpu


def measured(fn):
    """(samples, wall seconds, CPU seconds) of one run of fn."""
    cpu = cpu_seconds()
    samples, seconds = fn()
    return samples, seconds, cpu_seconds() - cpu


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default=os.path.join(HERE, "..", "build", "cntkio"), help="the cntkio binary")
    parser.add_argument("--sequences", type=int, default=120000)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--chunk-mib", type=int, default=8)
    parser.add_argument("--minibatch-size", type=int, default=4096)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=1,
                        help="sweeps each row reads (the DataLoader: epochs, with set_epoch); the index is built "
                             "once per row either way")
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
        cpp_loop(config, "Random", mb, 1)  # warm the page cache
        start_up = statistics.median(cli_start_up(args.cli) for _ in range(3))
        verdict = None
        for section in ("Random", "FileOrder"):
            e = args.epochs
            rows = [("cntkio bench (C++ CLI)", lambda: cli_bench(args.cli, config, section, mb, e)),
                    ("C++ loop in cntkio._core", lambda: cpp_loop(config, section, mb, e)),
                    ("MinibatchSource.next_minibatch + arrays", lambda: python_source(config, section, mb, e)),
                    ("torch DataLoader, %d workers" % args.workers,
                     lambda: data_loader(config, section, mb, args.workers, e)),
                    ("  the same, prefetch_factor %d" % cntkio.torch.PREFETCH_FACTOR,
                     lambda: data_loader(config, section, mb, args.workers, e, cntkio.torch.PREFETCH_FACTOR))]
            runs = [[measured(fn) for _, fn in rows] for _ in range(args.repeat)]  # runs[repetition][row]
            counts = {run[0] for rep in runs for run in rep}
            assert len(counts) == 1, "the rows read different sample counts: %s" % counts
            samples = counts.pop()
            print("%s reading, %d epoch(s), %d samples, %d repetitions (load average %.1f):"
                  % ("randomized" if section == "Random" else "file-order", args.epochs, samples, args.repeat,
                     os.getloadavg()[0]))
            print("  %-42s %10s %8s %8s %8s %7s %7s" % ("", "samples/s", "median", "best", "CPU s", "ratio", "CPU"))
            for i, (name, _) in enumerate(rows):
                wall = statistics.median(rep[i][1] for rep in runs)
                cpu = statistics.median(rep[i][2] for rep in runs)
                ratio = statistics.median(rep[0][1] / rep[i][1] for rep in runs)
                cpu_ratio = statistics.median(rep[0][2] / rep[i][2] for rep in runs)
                print("  %-42s %10.0f %7.3fs %7.3fs %7.3fs %6.2fx %6.2fx" % (
                    name, samples / wall, wall, min(rep[i][1] for rep in runs), cpu, ratio, cpu_ratio))
            if section == "Random":
                verdict = statistics.median(rep[0][1] / rep[-2][1] for rep in runs)
                tuned = statistics.median(rep[0][1] / rep[-1][1] for rep in runs)
        print("CPU s of the CLI include its process start-up: %.3f s (cntkio --version)" % start_up)
        print("DataLoader / cntkio bench (randomized, wall time, %d epoch(s)) = %.2f (target >= 0.8): %s; with "
              "prefetch_factor %d (MinibatchLoader's default): %.2f" %
              (args.epochs, verdict, "met" if verdict >= 0.8 else "NOT met", cntkio.torch.PREFETCH_FACTOR, tuned))
    return 0


if __name__ == "__main__":
    sys.exit(main())
