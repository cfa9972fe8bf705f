"""`cntkio bench --ctf FILE --stream name:field:dim[:sparse]`: a CTF file benchmarked without a config file,
read as cntk.io's MinibatchSource(CTFDeserializer(FILE, streams)) reads it."""

import json
import subprocess

import pytest

import cntkio
from conftest import write_ctf

LENGTHS = [1 + (i * 7) % 5 for i in range(300)]


def bench(cli, *args):
    result = subprocess.run([cli, "bench", "--json"] + list(args), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def python_counts(path, sweeps, minibatch_size, randomize):
    """minibatches, sequences and samples (the longest stream of each minibatch, as the CLI counts) of cntk.io
    reading."""
    streams = cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2),
                                labels=cntkio.StreamDef(field="l", shape=5, is_sparse=True))
    source = cntkio.MinibatchSource(cntkio.CTFDeserializer(path, streams), max_sweeps=sweeps, randomize=randomize)
    minibatches = sequences = samples = 0
    while True:
        mb = source.next_minibatch(minibatch_size)
        if not mb:
            return minibatches, sequences, samples
        minibatches += 1
        sequences += mb["features"].num_sequences
        samples += max(data.num_samples for data in mb.values())


@pytest.mark.parametrize("randomize", [True, False])
def test_bench_reads_a_ctf_file_as_cntk_io_does(cli, tmp_path, randomize):
    path = write_ctf(tmp_path / "b.ctf", LENGTHS)
    args = ["--ctf", path, "--stream", "features:f:2", "--stream", "labels:l:5:sparse", "--sweeps", "3",
            "--mb-size", "16"] + ([] if randomize else ["--file-order"])
    got = bench(cli, *args)
    minibatches, sequences, samples = python_counts(path, 3, 16, randomize)
    # Minibatches cut where a sequence no longer fits: the counts follow the order the sequences come in.
    assert (got["minibatches"], got["sequences"], got["samples"]) == (minibatches, sequences, samples)
    assert got["sequences"] == 3 * len(LENGTHS)
    other = python_counts(path, 3, 16, not randomize)
    assert other[0] != minibatches or other[2] != samples  # the order matters, so the test can tell


@pytest.mark.parametrize("args,message", [
    (["--ctf", "{path}"], "--ctf needs at least one --stream"),
    (["--ctf", "{path}", "--stream", "features:f"], "--stream features:f: expected name:field:dim"),
    (["--ctf", "{path}", "--stream", "features:f:0"], "expected name:field:dim"),
    (["--ctf", "{path}", "--stream", "features:f:2:csr"], "expected name:field:dim"),
    (["--ctf", "{path}", "--stream", "a b:f:2"], "expected name:field:dim"),
    ([], "bench needs --config and --section, or --ctf with --stream"),
    (["--ctf", "{path}", "--config", "x.cntk", "--stream", "features:f:2"], "excludes"),
    (["--ctf", "{path}", "--stream", "features:f:2", "--threads", "-5"], "--threads: '-5' is not a whole number"),
    (["--ctf", "{path}", "--stream", "a:f:2", "--stream", "b:f:2"], "the reader of --ctf and --stream: Two streams"),
    (["--ctf", "{path}", "--stream", "a:f:2", "--chunk-cache", "lots"], "--chunk-cache: 'lots' is not a byte size"),
    (["--config", "{path}", "--section", "R", "--stream", "a:f:2"], "--stream goes with --ctf"),
    (["--config", "{path}", "--section", "R", "--file-order"], "--file-order goes with --ctf"),
])
def test_bench_without_a_config_checks_its_arguments(cli, tmp_path, args, message):
    path = write_ctf(tmp_path / "b.ctf", LENGTHS)
    result = subprocess.run([cli, "bench"] + [a.format(path=path) for a in args], capture_output=True, text=True)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_bench_names_a_missing_ctf_file(cli, tmp_path):
    missing = str(tmp_path / "missing.ctf")
    result = subprocess.run([cli, "bench", "--ctf", missing, "--stream", "x:f:2"], capture_output=True, text=True)
    assert result.returncode == 5 and "missing.ctf" in result.stderr, result.stderr


def test_bench_shows_where_the_time_goes_and_what_the_chunk_cache_holds(cli, tmp_path):
    path = write_ctf(tmp_path / "b.ctf", LENGTHS)
    args = ["--ctf", path, "--stream", "features:f:2", "--stream", "labels:l:5:sparse", "--sweeps", "3",
            "--mb-size", "16", "--threads", "2"]
    plain = bench(cli, *args)
    cached = bench(cli, *(args + ["--chunk-cache", "1MiB"]))
    for got in (plain, cached):
        assert len(got["sweep_seconds"]) == 3 and all(t > 0 for t in got["sweep_seconds"])
        assert sum(got["sweep_seconds"]) <= got["seconds"] + 1e-5  # each printed to the microsecond
        stages = got["stages"]
        assert set(stages) == {"index_s", "load_s", "randomize_s", "pack_s", "chunk_wait_s", "minibatch_wait_s"}
        assert stages["index_s"] > 0 and stages["load_s"] > 0 and stages["pack_s"] > 0
        assert all(v >= 0 for v in stages.values())
        threads = got["loader_threads"]
        assert len(threads) == 2
        assert all(0 <= t["utilisation"] <= 1 and t["busy_s"] >= 0 for t in threads)
        assert sum(t["busy_s"] for t in threads) > 0  # the chunk loads ran there
    assert plain["chunk_cache"] == {"budget_bytes": 0, "bytes": 0, "chunks": 0, "hits": 0, "misses": 0,
                                    "invalidations": 0}
    cache = cached["chunk_cache"]
    assert cache["budget_bytes"] == 1 << 20 and 0 < cache["bytes"] <= 1 << 20
    # One chunk, parsed once in 3 sweeps (the randomizer keeps it from one sweep to the next, so the cache is not
    # asked again).
    assert cache["chunks"] == cache["misses"] == 1
    assert (cached["samples"], cached["sequences"], cached["minibatches"]) == \
        (plain["samples"], plain["sequences"], plain["minibatches"])


def test_bench_text_output_names_the_stages(cli, tmp_path):
    path = write_ctf(tmp_path / "b.ctf", LENGTHS)
    result = subprocess.run([cli, "bench", "--ctf", path, "--stream", "features:f:2", "--sweeps", "2",
                             "--chunk-cache", "1MiB", "--threads", "1"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    for words in ("sweeps:", "stages: index", "load/parse", "randomize", "pack", "waiting: for chunks",
                  "for minibatches", "loader threads busy:", "chunk cache: 1 chunk(s)"):
        assert words in result.stdout, result.stdout


def test_bench_counts_the_bytes_of_every_file_of_a_corpus(cli, tmp_path):
    # a config array, a glob and a list file: MB/s counts each file once
    first = write_ctf(tmp_path / "s1.ctf", LENGTHS)
    second = write_ctf(tmp_path / "s2.ctf", LENGTHS, first=len(LENGTHS))
    size = (tmp_path / "s1.ctf").stat().st_size + (tmp_path / "s2.ctf").stat().st_size
    (tmp_path / "list.txt").write_text("s1.ctf\ns2.ctf\n")
    inputs = 'input = [ features = [ alias = f ; dim = 2 ; format = dense ] ]'
    for files in ['file = ("%s":"%s")' % (first, second), 'file = "%s/s*.ctf"' % tmp_path,
                  'fileList = "%s/list.txt"' % tmp_path]:
        config = tmp_path / "c.cntk"
        config.write_text('R = [ reader = [ randomize = false ; deserializers = ( [ type = "CNTKTextFormatDeserializer"'
                          ' ; %s ; %s ] ) ] ]\n' % (files, inputs))
        report = bench(cli, "--config", str(config), "--section", "R")
        assert report["input_bytes_per_sweep"] == size, (files, report)
        assert report["mb_per_s"] > 0, (files, report)


def test_inspect_checks_its_counts(cli, tmp_path):
    path = write_ctf(tmp_path / "b.ctf", LENGTHS)
    config = tmp_path / "c.cntk"
    config.write_text('R = [ reader = [ readerType = "CNTKTextFormatReader" ; file = "%s"\n'
                      '  input = [ features = [ alias = f ; dim = 2 ; format = dense ] ] ] ]\n' % path)
    for args in (["--mb-size", "-1"], ["--mb-size", "0"], ["--minibatches", "-1"],
                 ["--mb-size", "99999999999999999999"]):
        result = subprocess.run([cli, "inspect", "--config", str(config), "--section", "R"] + args,
                                capture_output=True, text=True)
        assert result.returncode == 2 and "--" in result.stderr, (args, result.stderr)
        assert result.stdout == "", args  # refused before anything is described


@pytest.mark.parametrize("args, message", [
    (["convert-htk", "{path}", "{out}.scp", "--stream", "f:0"], "its dim must be a whole number"),
    (["convert-htk", "{path}", "{out}.scp", "--stream", "f:-1"], "its dim must be a whole number"),
    (["convert", "{path}", "{out}.ctf", "--stream", "a:f:2:dense", "--stream", "b:f:2:dense"],
     "--stream: Two streams use the alias 'f'"),
])
def test_stream_options_of_the_converters_are_usage_errors(cli, tmp_path, args, message):
    # mistakes in command-line options exit 2 and name the option, not config keys the user never wrote
    path = write_ctf(tmp_path / "b.ctf", LENGTHS)
    result = subprocess.run([cli] + [a.format(path=path, out=tmp_path / "out") for a in args], capture_output=True,
                            text=True)
    assert result.returncode == 2 and message in result.stderr, result.stderr


@pytest.mark.parametrize("args, message", [
    (["frob"], "'frob' is not a command or option of cntkio"),
    (["--bogus"], "'--bogus' is not a command or option of cntkio"),
    ([], "A subcommand is required"),
])
def test_an_unknown_command_is_named(cli, args, message):
    result = subprocess.run([cli] + args, capture_output=True, text=True)
    assert result.returncode == 2 and message in result.stderr, result.stderr


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["dump", "--help"]])
def test_help_and_version_that_cannot_be_written_are_an_io_error(cli, args):
    with open("/dev/full", "w") as full:
        result = subprocess.run([cli] + args, stdout=full, stderr=subprocess.PIPE, text=True)
    assert result.returncode == 5 and "cannot write standard output" in result.stderr, result.stderr
