#!/usr/bin/python3
"""Samples/s through cntkio.torch (in process and with a DataLoader's 2 worker processes) against the C++
figure of `cntkio bench` for the same data and reader config, on four shapes of data.

Shapes (generated CTF files, fixed seeds; each read randomized with CNTK's chunk-wise split between workers):

  dense     one-sample sequences: dense `features` (dim 32), dense `label` (dim 10); 8 MiB chunks, minibatch 4096
  sparse    one-sample sequences: sparse `words` (dim 20000, 20 entries), one-hot `label` (dim 100); 8 MiB chunks,
            minibatch 4096
  sequence  sequences of 1..8 steps: dense `features` (dim 32), one-hot `label` on the first step; 8 MiB chunks,
            minibatch 4096
  atis      ATIS's shape: 5000 sequences of 5..30 words, one-hot S0 (query word, dim 943) and S2 (slot label,
            dim 129) on every word, S1 (intent, dim 26) on the first; read as a cntk.io user does, through
            CTFDeserializer objects (one 32 MiB chunk: the whole file), and by the CLI without a config
            (`cntkio bench --ctf FILE --stream query:S0:943:sparse ...`); minibatch 1000, S0/S1/S2 as class
            indices (as_indices)

Rows, each reading --epochs sweeps:

  cntkio bench                 C++ CLI, cntk.io (v2) reading, one process           <- the reference
  in process                   MinibatchLoader(dataset) without workers (MinibatchDataset items, one process)
  2 workers, persistent        MinibatchLoader(dataset, num_workers=2, persistent_workers=True)
  2 workers, new each epoch    MinibatchLoader(dataset, num_workers=2): new worker processes every epoch
  DataLoader, new each epoch   torch DataLoader(dataset, batch_size=None, num_workers=2): one minibatch per item

The rows run interleaved, one of each per repetition (--repeat), so that a change in the machine's load hits
all of them alike. Printed per row: samples/s and seconds of the median run, the best run, CPU seconds (median;
the process and its children, so the workers count, and the CLI's process start-up too), and the ratio to
cntkio bench: the median of the per-repetition ratios of wall time, and of CPU time. Targets (wall): in
process >= 0.9x, persistent workers >= 0.8x on every shape, new workers each epoch >= 0.6x on atis (>= 0.8x on
the others). Every Python row times the dataset's creation (it indexes the data) and the DataLoader's.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_throughput.py [--cli build/cntkio] [--shapes atis,dense]
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

TARGETS = {"in process": 0.9, "2 workers, persistent": 0.8, "2 workers, new each epoch": 0.8}
ATIS_NEW_WORKERS_TARGET = 0.6


def write_dense(path, sequences):
    rng = random.Random(1)
    with open(path, "w") as out:
        for s in range(sequences):
            values = " ".join("%.4f" % rng.uniform(-1, 1) for _ in range(32))
            label = " ".join("1" if k == s % 10 else "0" for k in range(10))
            out.write("%d |features %s |label %s\n" % (s, values, label))


def write_sparse(path, sequences):
    rng = random.Random(2)
    with open(path, "w") as out:
        for s in range(sequences):
            words = " ".join("%d:1" % w for w in sorted(rng.sample(range(20000), 20)))
            out.write("%d |words %s |label %d:1\n" % (s, words, rng.randrange(100)))


def write_sequence(path, sequences):
    rng = random.Random(1)
    with open(path, "w") as out:
        for s in range(sequences):
            for t in range(1 + s % 8):
                values = " ".join("%.4f" % rng.uniform(-1, 1) for _ in range(32))
                label = " |label %d:1" % rng.randrange(100) if t == 0 else ""
                out.write("%d |features %s%s\n" % (s, values, label))


def write_atis(path, sequences):
    """ATIS's shape: S0 query word and S2 slot label on every word, S1 intent on the first."""
    rng = random.Random(7)
    with open(path, "w") as out:
        for s in range(sequences):
            intent = rng.randrange(26)
            for t in range(rng.randint(5, 30)):
                intent_field = " |S1 %d:1" % intent if t == 0 else ""
                out.write("%d |S0 %d:1%s |S2 %d:1\n" % (s, rng.randrange(943), intent_field, rng.randrange(129)))


# name: (writer, default sequences, minibatch size, chunk MiB or None (the default 32), streams (name, field,
# dim, sparse), length stream)
SHAPES = {
    "dense": (write_dense, 120000, 4096, 8, [("features", "features", 32, False), ("label", "label", 10, False)],
              "features"),
    "sparse": (write_sparse, 120000, 4096, 8, [("words", "words", 20000, True), ("label", "label", 100, True)],
               "words"),
    "sequence": (write_sequence, 120000, 4096, 8,
                 [("features", "features", 32, False), ("label", "label", 100, True)], "features"),
    "atis": (write_atis, 5000, 1000, None,
             [("query", "S0", 943, True), ("intent", "S1", 26, True), ("slots", "S2", 129, True)], "query"),
}


def write_config(path, data, streams, chunk_mib):
    inputs = "\n".join("   %s = [ alias = %s ; dim = %d ; format = %s ]" % (name, field, dim,
                                                                           "sparse" if sparse else "dense")
                       for name, field, dim, sparse in streams)
    chunk = "  chunkSizeInBytes = %d\n" % (chunk_mib << 20) if chunk_mib else ""
    with open(path, "w") as out:
        out.write('Random = [ reader = [\n randomize = true\n deserializers = ( [\n'
                  '  type = CNTKTextFormatDeserializer\n  file = "%s"\n%s  input = [\n%s ]\n ] ) ] ]\n'
                  % (data, chunk, inputs))


def config_source(config):
    return cntkio.MinibatchSource.from_config(config, "Random")


def dataset_source(shape, data, config):
    """What the dataset reads: the ATIS user's deserializer objects, or the config's reader."""
    if SHAPES[shape][3] is None:
        streams = SHAPES[shape][4]
        return cntkio.CTFDeserializer(data, cntkio.StreamDefs(**{
            name: cntkio.StreamDef(field=field, shape=dim, is_sparse=sparse) for name, field, dim, sparse in streams}))
    return functools.partial(config_source, config)


def cpu_seconds():
    """CPU time of this process and of its waited-for children (the CLI, the DataLoader's workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def cli_bench(cli, shape, data, config, mb, epochs):
    if SHAPES[shape][3] is None:  # what the ATIS user runs: no config file
        what = ["--ctf", data] + ["--stream=%s:%s:%d%s" % (name, field, dim, ":sparse" if sparse else "")
                                  for name, field, dim, sparse in SHAPES[shape][4]]
    else:
        what = ["--config", config, "--section", "Random"]
    out = subprocess.run([cli, "bench"] + what + ["--sweeps", str(epochs), "--mb-size", str(mb), "--json"],
                         capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["samples"], r["seconds"]


def torch_rows(shape, data, config, mb, epochs, workers, split):
    length_key = SHAPES[shape][5] + "_lengths"
    as_indices = {name: -100 for name, _, _, sparse in SHAPES[shape][4] if sparse} if shape == "atis" else None

    def read(num_workers, persistent=False, plain=False):
        start = time.perf_counter()  # the dataset indexes the data when it is made (share_index)
        dataset = cntkio.torch.MinibatchDataset(dataset_source(shape, data, config), mb, as_indices=as_indices,
                                                worker_split=split)
        if plain:
            loader = DataLoader(dataset, batch_size=None, num_workers=num_workers)
        else:
            loader = cntkio.torch.MinibatchLoader(dataset, num_workers=num_workers,
                                                  persistent_workers=persistent and num_workers > 0)
        samples = 0
        for epoch in range(epochs):
            if plain:
                dataset.set_epoch(epoch)  # new worker processes every epoch (the DataLoader's default)
            for batch in loader:
                samples += int(batch[length_key].sum())
        return samples, time.perf_counter() - start

    return [("in process", lambda: read(0)),
            ("%d workers, persistent" % workers, lambda: read(workers, persistent=True)),
            ("%d workers, new each epoch" % workers, lambda: read(workers)),
            ("DataLoader, new each epoch", lambda: read(workers, plain=True))]


def measured(fn):
    """(samples, wall seconds, CPU seconds) of one run of fn."""
    cpu = cpu_seconds()
    samples, seconds = fn()
    return samples, seconds, cpu_seconds() - cpu


def run_shape(args, shape, tmp):
    writer, sequences, mb, chunk_mib, streams, _ = SHAPES[shape]
    sequences = args.sequences or sequences
    mb = args.minibatch_size or mb
    data, config = os.path.join(tmp, shape + ".ctf"), os.path.join(tmp, shape + ".cntk")
    writer(data, sequences)
    write_config(config, data, streams, chunk_mib)
    e = args.epochs
    rows = [("cntkio bench (C++ CLI)", lambda: cli_bench(args.cli, shape, data, config, mb, e))]
    rows += torch_rows(shape, data, config, mb, e, args.workers, args.worker_split)
    cli_bench(args.cli, shape, data, config, mb, 1)  # warm the page cache
    runs = [[measured(fn) for _, fn in rows] for _ in range(args.repeat)]  # runs[repetition][row]
    counts = {run[0] for rep in runs for run in rep}
    assert len(counts) == 1, "the rows of %s read different sample counts: %s" % (shape, counts)
    samples = counts.pop()
    print("%s: %d sequences, %.1f MB CTF, %s chunks, minibatch %d, %d epoch(s), %d samples, %d repetitions "
          "(load average %.1f):" % (shape, sequences, os.path.getsize(data) / 1e6,
                                    "%d MiB" % chunk_mib if chunk_mib else "32 MiB", mb, e, samples, args.repeat,
                                    os.getloadavg()[0]))
    print("  %-30s %10s %8s %8s %8s %7s %7s" % ("", "samples/s", "median", "best", "CPU s", "ratio", "CPU"))
    ratios = {}
    for i, (name, _) in enumerate(rows):
        wall = statistics.median(rep[i][1] for rep in runs)
        cpu = statistics.median(rep[i][2] for rep in runs)
        ratio = statistics.median(rep[0][1] / rep[i][1] for rep in runs)
        cpu_ratio = statistics.median(rep[0][2] / rep[i][2] for rep in runs)
        ratios[name] = ratio
        print("  %-30s %10.0f %7.3fs %7.3fs %7.3fs %6.2fx %6.2fx" % (
            name, samples / wall, wall, min(rep[i][1] for rep in runs), cpu, ratio, cpu_ratio))
    return ratios


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default=os.path.join(HERE, "..", "build", "cntkio"), help="the cntkio binary")
    parser.add_argument("--shapes", default="dense,sparse,sequence,atis",
                        help="comma-separated: " + ", ".join(SHAPES))
    parser.add_argument("--sequences", type=int, default=0, help="sequences per file (default: per shape)")
    parser.add_argument("--minibatch-size", type=int, default=0, help="samples per minibatch (default: per shape)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--worker-split", default="chunks", choices=["auto", "chunks", "minibatches"],
                        help="MinibatchDataset's worker_split (default chunks, the dataset's default; auto: by "
                             "minibatches where the data has fewer chunks than workers, the atis shape)")
    parser.add_argument("--epochs", type=int, default=3, help="sweeps each row reads (Python rows: epochs)")
    args = parser.parse_args(argv)
    shapes = args.shapes.split(",")
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        parser.error("unknown shape(s): %s" % ", ".join(unknown))
    torch.set_num_threads(1)
    print("%d cores, load average %.1f %.1f %.1f, worker_split %s" % ((os.cpu_count(),) + os.getloadavg()
                                                                     + (args.worker_split,)))
    verdicts = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes:
            ratios = run_shape(args, shape, tmp)
            for name, ratio in ratios.items():
                key = name.replace("%d workers" % args.workers, "2 workers")
                if key not in TARGETS:
                    continue
                target = ATIS_NEW_WORKERS_TARGET if shape == "atis" and "new each" in key else TARGETS[key]
                verdicts.append("%s / %s: %.2fx (target >= %.1fx, %s)" % (shape, name, ratio, target,
                                                                         "met" if ratio >= target else "NOT met"))
    print("Ratios to cntkio bench (wall time, median; load average now %.1f):" % os.getloadavg()[0])
    for line in verdicts:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
