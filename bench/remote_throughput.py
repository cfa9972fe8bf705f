#!/usr/bin/env python3
"""Remote data benchmark (issue #24 item 5): a ~1 GB sharded CTF corpus read from local files and from nginx
on 127.0.0.1 (http://), with the default settings of the remote Env.

  - sweep: a full pass over the corpus without index caches (index pass + every chunk), in MB/s of CTF text;
    target: remote >= 0.8 x local.
  - first: the reader built and its first minibatch read with warm index caches (local: next to the files;
    remote: in $CNTKIO_CACHE_DIR); target: remote <= 1.2 x local.

Each run is a fresh process (build/bench/remote_read), local and remote interleaved, --reps each; medians.
The corpus is written once to --dir (default /tmp/cntkio-remote-bench, kept for later runs, never in the
tree). Run it under the build lock on a shared machine:

  flock /tmp/cntkio-build.lock python3 bench/remote_throughput.py [--shards 16] [--shard-mb 64] [--reps 3]

--before OTHER_BUILD also times OTHER_BUILD's remote_read (another commit's build folder), interleaved with
this build's runs, and prints both.
"""

import argparse
import os
import pathlib
import random
import statistics
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "remote"))
import servers  # noqa: E402

DIM = 16


def write_corpus(folder, shards, shard_mb):
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / ("shard%02d.ctf" % k) for k in range(shards)]
    if all(p.exists() and p.stat().st_size >= shard_mb * 10 ** 6 for p in paths):
        return paths
    rng = random.Random(1)
    lines = ["|f " + " ".join("%.5f" % rng.uniform(-1, 1) for _ in range(DIM)) + "\n" for _ in range(4096)]
    block = "".join(lines).encode()
    for k, path in enumerate(paths):
        with open(path, "wb") as out:
            written = 0
            while written < shard_mb * 10 ** 6:
                out.write(block)
                written += len(block)
    return paths


def run(tool, mode, listing, env):
    result = subprocess.run([tool, mode, str(listing), str(DIM)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    if result.returncode != 0:
        raise SystemExit("remote_read %s %s failed: %s" % (mode, listing, result.stderr))
    fields = result.stdout.split()
    return float(fields[1]), int(fields[2]), float(fields[4]) if len(fields) > 4 else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/tmp/cntkio-remote-bench")
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--shard-mb", type=int, default=64)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--build", default=str(REPO / "build"))
    parser.add_argument("--before", help="another build folder, timed interleaved with --build")
    args = parser.parse_args()
    tools = [("", str(pathlib.Path(args.build) / "bench" / "remote_read"))]
    if args.before:
        tools.append(("before: ", str(pathlib.Path(args.before) / "bench" / "remote_read")))
    folder = pathlib.Path(args.dir)
    paths = write_corpus(folder / "data", args.shards, args.shard_mb)
    total = sum(p.stat().st_size for p in paths)
    env = dict(os.environ, CNTKIO_CACHE_DIR=str(folder / "cache"))
    with servers.Nginx(folder / "data") as nginx:
        local_list = folder / "local.txt"
        remote_list = folder / "remote.txt"
        local_list.write_text("".join("%s\n" % p for p in paths))
        remote_list.write_text("".join("%s/%s\n" % (nginx.url, p.name) for p in paths))
        # Warm the index caches (and the page cache) once each.
        run(tools[0][1], "first", local_list, env)
        run(tools[0][1], "first", remote_list, env)
        times = {(t, m, s): [] for t, _ in tools for m in ("sweep", "first", "built") for s in ("local", "remote")}
        samples = {}
        for rep in range(args.reps):
            for mode in ("sweep", "first"):
                for side, listing in (("local", local_list), ("remote", remote_list)):
                    for label, tool in tools:
                        seconds, n, built = run(tool, mode, listing, env)
                        times[(label, mode, side)].append(seconds)
                        if mode == "first":
                            times[(label, "built", side)].append(built)
                        samples[(label, mode, side)] = n
        load = open("/proc/loadavg").read().split()[:3]
    label = tools[0][0]
    assert len(set(n for (_, m, _), n in samples.items() if m == "sweep")) == 1, samples
    med = {k: statistics.median(v) for k, v in times.items()}
    print("corpus: %d shards, %.2f GB of CTF text (%d samples), medians of %d runs; load %s" %
          (len(paths), total / 1e9, samples[(label, "sweep", "local")], args.reps, " ".join(load)))
    for label, _ in tools:
        for side in ("local", "remote"):
            print("  %ssweep %-6s %7.2f s  %7.1f MB/s" % (label, side, med[(label, "sweep", side)],
                                                      total / 1e6 / med[(label, "sweep", side)]))
        ratio = med[(label, "sweep", "local")] / med[(label, "sweep", "remote")]
        print("  %sremote/local throughput: %.2f (target >= 0.8)" % (label, ratio))
        for side in ("local", "remote"):
            print("  %sfirst minibatch, warm index cache, %-6s %7.1f ms (reader built in %.1f ms)" % (
                label, side, 1000 * med[(label, "first", side)], 1000 * med[(label, "built", side)]))
        first_ratio = med[(label, "first", "remote")] / med[(label, "first", "local")]
        print("  %sremote/local time to the first minibatch: %.2f (target <= 1.2)" % (label, first_ratio))


if __name__ == "__main__":
    main()
