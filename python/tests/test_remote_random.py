"""Remote reading under random reader settings (a fixed seed; CNTKIO_RANDOM_ROUNDS=n runs more): a corpus of
CTF shards served by nginx on 127.0.0.1 must read over HTTP exactly as from the local files, whatever the
randomization, shards, minibatch sizes, partitions and loader threads, in this process (the remote Env's
default settings) and, through the CLI in a child process, with small remote blocks and other read-ahead
settings."""

import os
import random
import subprocess
import sys

import pytest

import cntkio
from conftest import REPO, write_ctf

sys.path.insert(0, str(REPO / "tests" / "remote"))
import servers  # noqa: E402

ROUNDS = int(os.environ.get("CNTKIO_RANDOM_ROUNDS", "6"))
SHARDS = 4


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(local paths, URLs, the server) of SHARDS CTF files of 2,000-6,000 sequences (70-230 KB) each, ids
    running on from file to file."""
    folder = tmp_path_factory.mktemp("served")
    rng = random.Random(5)
    local, first = [], 0
    for k in range(SHARDS):
        count = rng.randint(2000, 6000)
        local.append(write_ctf(folder / ("shard%d.ctf" % k), [1 + (first + i) % 5 for i in range(count)],
                               first=first))
        first += count
    with servers.Nginx(folder) as nginx:
        yield local, [nginx.url + "/" + os.path.basename(p) for p in local], nginx


def streams():
    return cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2),
                             labels=cntkio.StreamDef(field="l", shape=5, is_sparse=True))


def read(paths, kwargs, size, partitions, index):
    source = cntkio.MinibatchSource(cntkio.CTFDeserializer(paths if len(paths) > 1 else paths[0], streams()),
                                    max_sweeps=1, **kwargs)
    out = []
    while True:
        mb = source.next_minibatch(size, num_data_partitions=partitions, partition_index=index)
        if not mb:
            return out
        out.append([s.tolist() for s in mb[source.streams.features].as_sequences()])


@pytest.mark.parametrize("round_number", range(ROUNDS))
def test_random_settings_read_over_http_as_locally(served, round_number):
    local, urls, nginx = served
    rng = random.Random(900 + round_number)
    chosen = sorted(rng.sample(range(SHARDS), rng.randint(1, SHARDS)))
    kwargs = {"multithreaded_deserializer": rng.random() < 0.5}
    if rng.random() < 0.3:
        kwargs["randomize"] = False
    else:
        kwargs["randomization_seed"] = rng.randint(0, 9)
        if rng.random() < 0.5:
            kwargs["randomization_window_in_samples"] = rng.randint(50, 3000)
    size = rng.randint(1, 200)
    partitions = rng.randint(1, 3)
    what = "shards %s %s mb %d partitions %d" % (chosen, kwargs, size, partitions)
    minibatches = 0
    for index in range(partitions):  # (a partition may own no chunk: one chunk per file here)
        here = read([local[k] for k in chosen], kwargs, size, partitions, index)
        assert read([urls[k] for k in chosen], kwargs, size, partitions, index) == here, what
        minibatches += len(here)
    assert minibatches > 0, what
    assert nginx.bytes_sent("/shard%d.ctf" % chosen[0]) > 0  # read from the server


@pytest.mark.parametrize("round_number", range(max(1, ROUNDS // 2)))
def test_small_remote_blocks_read_over_http_as_locally(served, cli, tmp_path, round_number):
    """The CLI in a child process, with remote blocks of 4-64 KiB and several read-ahead settings."""
    local, urls, _ = served
    rng = random.Random(950 + round_number)
    chosen = sorted(rng.sample(range(SHARDS), rng.randint(1, SHARDS)))
    env = dict(os.environ, CNTKIO_REMOTE_BLOCK_SIZE=str(4096 << rng.randint(0, 4)),
               CNTKIO_REMOTE_READ_AHEAD=str(rng.choice([0, 1, 4, 16])), CNTKIO_CACHE_DIR=str(tmp_path / "cache"))
    settings = ("randomize = false" if rng.random() < 0.3
                else "randomize = true ; randomizationSeed = %d" % rng.randint(0, 9))

    def dump(files):
        config = tmp_path / "r.cntk"
        config.write_text('r = [ reader = [ %s\n deserializers = ( [ type = "CNTKTextFormatDeserializer"\n'
                          ' file = (%s)\n input = [ features = [ alias = f ; dim = 2 ; format = dense ]\n'
                          ' labels = [ alias = l ; dim = 5 ; format = sparse ] ] ] ) ] ]\n'
                          % (settings, ":".join('"%s"' % f for f in files)))
        result = subprocess.run([cli, "dump", "--config", str(config), "--section", "r", "--mb-size",
                                 str(rng.randint(5, 300)), "--epochs", "1", "--separate-layouts"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout

    state = rng.getstate()
    here = dump([local[k] for k in chosen])
    rng.setstate(state)  # the same minibatch size for both
    there = dump([urls[k] for k in chosen])
    assert here.count("\n") > 100, here[:500]
    assert there == here, "shards %s, %s, %s" % (chosen, settings, {k: env[k] for k in env if "REMOTE" in k})
