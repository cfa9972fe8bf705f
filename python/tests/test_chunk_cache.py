"""The cache of decoded chunks (issue #25 item 6, beyond CNTK): ``chunkCacheBytes`` / ``chunk_cache=`` keeps parsed
chunks for later sweeps. The minibatches must be exactly those of a reader without it (randomized or not,
frames or sequences, two workers, checkpoints), the budget bounds what it keeps, and a data file that changes
drops it."""

import os
import pathlib

import numpy as np
import pytest

import cntkio
from conftest import ctf_source, write_ctf

LENGTHS = [1 + (i * 7) % 5 for i in range(400)]  # 1200 samples in 400 sequences
CHUNK_BYTES = 1024  # many small chunks (the file is about 10 KB)


def write_config(tmp_path, data, cache=None, randomize=True, frame_mode=False, max_errors=0, exact=False):
    """A reader section over ``data`` in many small chunks. ``exact``: no read-ahead and no loader threads, so
    that the chunks of sweep k are loaded while sweep k is read, once each (the counts below rely on it)."""
    path = tmp_path / ("reader_%s_%d.cntk" % (cache or "none", exact))
    path.write_text(
        'r = [ reader = [\n  randomize = %s\n  randomizationWindow = 3\n  sampleBasedRandomizationWindow = false\n'
        '  randomizationSeed = 5\n  frameMode = %s\n  maxErrors = %d\n  traceLevel = 0\n%s%s'
        '  deserializers = ( [ type = CNTKTextFormatDeserializer ; file = "%s" ; chunkSizeInBytes = %d\n'
        '    input = [ features = [ alias = f ; dim = 2 ; format = dense ]\n'
        '              labels = [ alias = l ; dim = 5 ; format = sparse ] ] ] )\n] ]\n'
        % ("true" if randomize else "false", "true" if frame_mode else "false", max_errors,
           "  chunkCacheBytes = %s\n" % cache if cache is not None else "",
           "  prefetch = false\n  loaderThreads = 0\n" if exact else "", data, CHUNK_BYTES))
    return str(path)


def write_config_text(tmp_path, text):
    path = tmp_path / ("reader_%d.cntk" % len(list(tmp_path.glob("reader_*.cntk"))))
    path.write_text(text)
    return str(path)


def from_config(path):
    return cntkio.MinibatchSource.from_config(path, "r")


def snapshot(mb):
    """Everything a minibatch holds, comparable with ==."""
    out = []
    for name in sorted(mb.keys(), key=lambda k: k.name):
        data = mb[name]
        value = data.data
        dense = value.asarray() if hasattr(value, "asarray") else None
        arrays = [np.asarray(dense).tolist()] if dense is not None and not data.is_sparse else []
        if data.is_sparse:
            arrays = [np.asarray(s.todense()).tolist() for s in data.as_sequences()]
        out.append((name.name, data.num_sequences, data.num_samples, data.end_of_sweep, arrays))
    return out


def read(source, count, size=32, partitions=1, rank=0):
    out = []
    for _ in range(count):
        mb = source.next_minibatch(size, num_data_partitions=partitions, partition_index=rank)
        if not mb:
            break
        out.append(snapshot(mb))
    return out


def sweep_minibatches(source, size=32, partitions=1, rank=0):
    """Minibatches up to and including the one that ends a sweep."""
    out = []
    while True:
        mb = source.next_minibatch(size, num_data_partitions=partitions, partition_index=rank)
        assert mb, "the reader ended before the sweep did"
        out.append(snapshot(mb))
        if any(d.end_of_sweep for d in mb.values()):
            return out


@pytest.fixture
def data(tmp_path):
    return write_ctf(tmp_path / "d.ctf", LENGTHS)


@pytest.mark.parametrize("randomize,frame_mode", [(True, False), (True, True), (False, False)])
@pytest.mark.parametrize("partitions", [1, 2])
def test_the_cache_gives_the_same_minibatches_over_several_sweeps(tmp_path, data, randomize, frame_mode, partitions):
    if frame_mode:  # frame mode reads sequences of one sample
        data = write_ctf(tmp_path / "frames.ctf", [1] * 800)
    plain = write_config(tmp_path, data, randomize=randomize, frame_mode=frame_mode)
    cached = write_config(tmp_path, data, cache="64MiB", randomize=randomize, frame_mode=frame_mode)
    for rank in range(partitions):
        expected = from_config(plain)
        source = from_config(cached)
        for _ in range(3):
            want = sweep_minibatches(expected, 32, partitions, rank)
            assert sweep_minibatches(source, 32, partitions, rank) == want
        stats = source.stats()["chunk_cache"]
        # The later sweeps were answered from the cache, and nothing was parsed twice.
        assert stats["hits"] > 0 and stats["chunks"] == stats["misses"] > 0, stats
        assert stats["invalidations"] == 0
        assert expected.stats()["chunk_cache"]["hits"] == 0


def test_a_checkpoint_restores_exactly_with_the_cache(tmp_path, data):
    plain = write_config(tmp_path, data)
    cached = write_config(tmp_path, data, cache="64MiB")
    expected = from_config(plain)
    want_head = read(expected, 50)
    want_tail = read(expected, 80)
    source = from_config(cached)
    assert read(source, 50) == want_head
    state = source.get_checkpoint_state()
    assert read(source, 80) == want_tail
    source.restore_from_checkpoint(state)  # the same source again: its cached chunks are asked for again
    assert read(source, 80) == want_tail
    resumed = from_config(cached)
    resumed.restore_from_checkpoint(state)
    assert read(resumed, 80) == want_tail
    assert source.stats()["chunk_cache"]["hits"] > 0


def test_a_budget_below_the_corpus_keeps_some_chunks_and_the_same_minibatches(tmp_path, data):
    everything = from_config(write_config(tmp_path, data, cache="64MiB", exact=True))
    for _ in range(2):
        sweep_minibatches(everything)
    full = everything.stats()["chunk_cache"]
    budget = full["bytes"] // 3
    expected = from_config(write_config(tmp_path, data))
    source = from_config(write_config(tmp_path, data, cache=str(budget), exact=True))
    for _ in range(3):
        assert sweep_minibatches(source) == sweep_minibatches(expected)
    stats = source.stats()["chunk_cache"]
    assert stats["budget_bytes"] == budget
    assert 0 < stats["bytes"] <= budget
    assert 0 < stats["chunks"] < full["chunks"]
    # The chunks that did not fit are parsed whenever they are asked for; those kept, once. The randomizer asks
    # for the same chunks whatever the budget (a chunk loaded at a sweep's end stays for the next sweep's window
    # without being asked for again): a budget that keeps nothing counts every request as a miss.
    nothing = from_config(write_config(tmp_path, data, cache="1", exact=True))
    for _ in range(3):
        sweep_minibatches(nothing)
    requests = nothing.stats()["chunk_cache"]
    assert requests["chunks"] == requests["hits"] == 0 and requests["misses"] > 2 * full["chunks"], requests
    assert stats["hits"] + stats["misses"] == requests["misses"], (stats, requests)
    assert stats["misses"] >= full["chunks"] and stats["hits"] > 0, stats


def test_the_cache_counts_the_bytes_of_the_data(tmp_path):
    # 100 one-sample sequences in one chunk: 2 dense floats, and one sparse entry (float value, int32 index) with
    # its int32 count per sample.
    path = write_ctf(tmp_path / "one.ctf", [1] * 100)
    source = ctf_source(path, chunk_cache=1 << 20, randomize=False)
    read(source, 10, size=50)
    assert source.stats()["chunk_cache"]["bytes"] == 100 * (2 * 4 + (4 + 4) + 4)


def rewrite_in_place(path, old, new):
    """Rewrites the file's bytes without changing its size or inode (an open mapping sees the new bytes)."""
    with open(path, "r+b") as f:
        text = f.read()
        replaced = text.replace(old, new)
        assert len(replaced) == len(text) and replaced != text
        f.seek(0)
        f.write(replaced)
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))


def test_a_data_file_rewritten_between_sweeps_drops_the_cache(tmp_path):
    # Feature values 0..399 of the sequence ids; the rewrite turns every '|f 1' (ids 1, 10-19, 100-199) into '|f 7'.
    path = write_ctf(tmp_path / "d.ctf", LENGTHS)
    expected = from_config(write_config(tmp_path, path, exact=True))
    source = from_config(write_config(tmp_path, path, cache="64MiB", exact=True))
    first = sweep_minibatches(source)
    assert first == sweep_minibatches(expected)
    rewrite_in_place(path, b"|f 1", b"|f 7")
    second = sweep_minibatches(source)
    # A reader without the cache reads the new bytes (its mapping shows them); so does the cached one.
    assert second == sweep_minibatches(expected)
    features_first = sorted(v for mb in first for (name, *_, arrays) in mb if name == "features"
                            for v in np.ravel(arrays))
    features_second = sorted(v for mb in second for (name, *_, arrays) in mb if name == "features"
                             for v in np.ravel(arrays))
    assert features_first != features_second  # the test can tell a stale cache
    assert source.stats()["chunk_cache"]["invalidations"] == 1
    assert sweep_minibatches(source) == sweep_minibatches(expected)
    assert source.stats()["chunk_cache"]["invalidations"] == 1  # unchanged since: kept again


def test_a_data_file_replaced_between_sweeps_reads_as_without_the_cache(tmp_path):
    path = write_ctf(tmp_path / "d.ctf", LENGTHS)
    expected = from_config(write_config(tmp_path, path, exact=True))
    source = from_config(write_config(tmp_path, path, cache="64MiB", exact=True))
    assert sweep_minibatches(source) == sweep_minibatches(expected)
    replacement = write_ctf(tmp_path / "new.ctf", LENGTHS, label_dim=3)
    os.replace(replacement, path)
    # Both readers keep the file they opened (the replaced one stays mapped); the cache is dropped all the same.
    assert sweep_minibatches(source) == sweep_minibatches(expected)
    assert source.stats()["chunk_cache"]["invalidations"] == 1


@pytest.mark.filterwarnings("ignore::cntkio.SkippedDataWarning")
def test_errors_tolerated_in_a_chunk_are_counted_on_every_sweep_as_without_the_cache(tmp_path):
    path = tmp_path / "bad.ctf"
    lines = ["%d |f %d 0 |l %d:1" % (i, i, i % 5) for i in range(300)]
    lines[150] += "\n150 |f 150 1 |l 9:1"  # a second row whose sparse index is out of range: one error
    path.write_text("\n".join(lines) + "\n")
    def config(cache):  # the CTF deserializer's own maxErrors
        text = pathlib.Path(write_config(tmp_path, str(path), cache=cache, max_errors=100, exact=True)).read_text()
        return write_config_text(tmp_path, text.replace("chunkSizeInBytes", "maxErrors = 100 ; chunkSizeInBytes"))

    expected = from_config(config(None))
    source = from_config(config("64MiB"))
    for _ in range(3):
        assert sweep_minibatches(source) == sweep_minibatches(expected)
    # CNTK counts an error on every parse (its budget is never reset): the chunk with the error is not kept.
    assert source.skip_report().errors == expected.skip_report().errors >= 3
    stats = source.stats()["chunk_cache"]
    assert stats["hits"] > 0  # the chunks without errors are kept


def test_chunk_cache_takes_a_count_or_a_size(tmp_path):
    path = write_ctf(tmp_path / "spec.ctf", [1, 2, 3])

    def spec_of(value):
        return ctf_source(path, chunk_cache=value)._spec.source.chunk_cache_bytes

    assert spec_of(None) == 0
    assert spec_of(4096) == 4096
    assert spec_of("4GiB") == 4 << 30
    assert spec_of("512MB") == 512 * 10 ** 6
    assert spec_of("3k") == 3 << 10
    for bad in ("4 bytes", "GiB", "-1", "1.5GiB", -1, 1.5):
        with pytest.raises(ValueError):
            spec_of(bad)


def test_the_config_key_names_a_bad_size(tmp_path, data):
    with pytest.raises(cntkio.ConfigError, match="chunkCacheBytes"):
        from_config(write_config(tmp_path, data, cache="lots"))


def test_the_config_text_of_a_source_carries_the_cache(tmp_path, data):
    source = ctf_source(data, chunk_cache="1MiB")
    assert "chunkCacheBytes = 1048576" in source.config_text


def test_a_source_without_the_cache_reports_stage_times(tmp_path, data):
    source = from_config(write_config(tmp_path, data))
    sweep_minibatches(source)
    stats = source.stats()
    assert stats["load_s"] > 0 and stats["index_s"] > 0
    assert all(stats[k] >= 0 for k in ("randomize_s", "pack_s", "chunk_wait_s", "minibatch_wait_s"))
    assert stats["chunk_cache"] == {"budget_bytes": 0, "bytes": 0, "chunks": 0, "hits": 0, "misses": 0,
                                    "invalidations": 0}


def test_dump_with_the_chunk_cache_writes_the_same_epochs(cli, tmp_path, data):
    import subprocess
    config = write_config(tmp_path, data)

    def dump(*more):
        result = subprocess.run([cli, "dump", "--config", config, "--section", "r", "--mb-size", "64",
                                 "--epochs", "3", "--max-minibatches", "100", "--separate-layouts"] + list(more),
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout

    plain = dump()
    assert plain.count("\n") > 3000
    assert dump("--chunk-cache", "4MiB") == plain
    bad = subprocess.run([cli, "dump", "--config", config, "--section", "r", "--mb-size", "64", "--chunk-cache",
                          "4 MiB"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--chunk-cache: '4 MiB' is not a byte size" in bad.stderr, bad.stderr


def test_a_corpus_of_several_files_is_cached(tmp_path):
    first = write_ctf(tmp_path / "a.ctf", LENGTHS[:200])
    second = write_ctf(tmp_path / "b.ctf", LENGTHS[200:])
    # A window of one chunk: the other file's chunk is dropped, and asked for again in later sweeps.
    expected = ctf_source([first, second], max_sweeps=3, randomization_window_in_chunks=1)
    source = ctf_source([first, second], max_sweeps=3, chunk_cache="1MiB", randomization_window_in_chunks=1)
    while True:
        want, got = read(expected, 1), read(source, 1)
        assert got == want
        if not want:
            break
    stats = source.stats()["chunk_cache"]
    assert stats["chunks"] == stats["misses"] == 2 and stats["hits"] >= 2, stats
