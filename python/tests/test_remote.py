"""Data read straight from HTTP and S3 (issue #24 item 4, docs/remote-data.md): reading a URL gives what
reading the local file gives; errors name the URL, the HTTP status or transport error and the byte range;
5xx answers are retried; a file changed under its reader is an error; the block cache is bounded; the index
cache of a remote file is local and a second process uses it. The servers (nginx, s3rver, a Python server
that fails) run on 127.0.0.1, started by tests/remote/servers.py.

Settings of the remote Env (CNTKIO_REMOTE_*) are read once per process: tests that need other settings run
build/tests/remote/cntkio_remote_read or the CLI in a child process."""

import os
import pathlib
import subprocess
import sys

import pytest

import cntkio
from conftest import REPO, build_dir, conformance_dir, write_ctf

sys.path.insert(0, str(REPO / "tests" / "remote"))
import servers  # noqa: E402

LENGTHS = [1 + i % 4 for i in range(300)]


def streams():
    return cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2),
                             labels=cntkio.StreamDef(field="l", shape=5, is_sparse=True))


def read_all(paths, size=13):
    source = cntkio.MinibatchSource(cntkio.CTFDeserializer(paths, streams()), randomize=False, max_sweeps=1)
    out = []
    while True:
        mb = source.next_minibatch(size)
        if not mb:
            return out
        out.append([s.tolist() for s in mb["features"].as_sequences()])


def remote_read(path, *ops, env=None, stdin_actions=None):
    """Runs cntkio_remote_read PATH OPS; `stdin_actions` are called at each `wait` op in turn. Returns the
    output lines."""
    tool = build_dir() / "tests" / "remote" / "cntkio_remote_read"
    full_env = dict(os.environ, CNTKIO_REMOTE_BACKOFF_MS="1", **(env or {}))
    process = subprocess.Popen([str(tool), path] + list(ops), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=full_env)
    lines = []
    actions = list(stdin_actions or [])
    for i in range(len(ops)):
        lines.append(process.stdout.readline().rstrip("\n"))
        if actions and ops[i + 1:i + 2] == ("wait",):  # the tool now waits: act, then let it go on
            actions.pop(0)()
            process.stdin.write("\n")
            process.stdin.flush()
    process.stdin.close()
    process.wait(timeout=60)
    return lines


SMALL_BLOCKS = {"CNTKIO_REMOTE_BLOCK_SIZE": "4096", "CNTKIO_REMOTE_READ_AHEAD": "0"}


def dump_first_minibatch(cli, config, env):
    """The CLI's dump of the first minibatch of 10 samples of section r of `config`."""
    result = subprocess.run([cli, "dump", "--config", config, "--section", "r", "--mb-size", "10",
                             "--max-minibatches", "1", "--epochs", "1"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def require_lazy_mapping(url):
    """Skips unless remote files map lazily here (userfaultfd may be refused, e.g. by a container's seccomp
    profile, or turned off with CNTKIO_REMOTE_MAP=0: readers then read remote files whole at open)."""
    if remote_read(url, "mappable") != ["mappable yes"]:
        pytest.skip("remote files are not mapped lazily here (userfaultfd unavailable or CNTKIO_REMOTE_MAP=0)")


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "served"
    folder.mkdir()
    return folder


def test_a_ctf_file_over_http_reads_as_the_local_file(data):
    local = write_ctf(data / "a.ctf", LENGTHS)
    with servers.Nginx(data) as nginx:
        assert read_all(nginx.url + "/a.ctf") == read_all(local)
        assert nginx.bytes_sent("/a.ctf") >= os.path.getsize(local)  # it was read from the server


def test_two_remote_files_of_one_size_and_time_keep_indexes_of_their_own(data):
    # nginx's ETag is the file's time and size: two files written in the same second at the same size share
    # it, and a backend without inodes gives no other identity. Their rows must still be their own.
    a = write_ctf(data / "a.ctf", LENGTHS[:40])
    rows = open(a).read().splitlines(keepends=True)
    assert rows[2].startswith("1 ") and rows[3].startswith("2 ")
    rows[2] = "2" + rows[2][1:]  # the same bytes but for one row moved from sequence 1 to sequence 2
    b = data / "b.ctf"
    b.write_text("".join(rows))
    settled = (int(os.path.getmtime(a)) - 100) * 10**9
    for path in (a, b):
        os.utime(path, ns=(settled, settled))
    assert os.path.getsize(a) == os.path.getsize(b)
    with servers.Nginx(data) as nginx:
        first = cntkio.MinibatchSource(cntkio.CTFDeserializer(nginx.url + "/a.ctf", streams()), randomize=False)
        assert first.next_minibatch(5)  # its index stays in use while the second file opens
        assert read_all(nginx.url + "/b.ctf") == read_all(str(b))
        assert read_all(nginx.url + "/a.ctf") == read_all(a)
        assert read_all(str(b)) != read_all(a)


def test_ctf_shards_over_s3_with_a_glob_read_as_the_local_files(data, monkeypatch):
    problem = servers.install_s3rver()
    assert problem is None, problem
    for k in range(3):
        write_ctf(data / ("shard%d.ctf" % k), LENGTHS[k * 100:(k + 1) * 100])
    local = [str(data / ("shard%d.ctf" % k)) for k in range(3)]
    with servers.S3rver({"bucket": data}) as s3:
        for name, value in s3.environment().items():
            monkeypatch.setenv(name, value)
        assert read_all("s3://bucket/shard*.ctf") == read_all(local)
        assert read_all(["s3://bucket/shard0.ctf", "s3://bucket/shard2.ctf"]) == read_all([local[0], local[2]])


def test_a_cbf_file_over_http_dumps_as_the_local_file(cli):
    root = conformance_dir()
    config = str(root / "config" / "CNTKBinaryReader" / "test.cntk")
    cwd = root / "data" / "CNTKBinaryReader"

    def dump(file):
        result = subprocess.run([cli, "dump", "--config", config, "--section", "Simple", "--mb-size", "100",
                                 "--set", 'Simple=[reader=[file="%s"]]' % file], cwd=str(cwd),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout

    with servers.Nginx(root) as nginx:
        remote = dump(nginx.url + "/data/CNTKBinaryReader/Simple_dense.bin")
        assert nginx.bytes_sent("Simple_dense.bin") > 0
    assert remote == dump("Simple_dense.bin")
    assert remote.count("\n") > 100


def test_a_missing_remote_file_is_a_located_file_not_found_error(data):
    with servers.Nginx(data) as nginx:
        url = nginx.url + "/missing.ctf"
        result = subprocess.run([str(build_dir() / "tests" / "remote" / "cntkio_remote_read"), url],
                                stdout=subprocess.PIPE, text=True)
        assert result.stdout.startswith("error cannot open input file (HTTP 404) '%s'" % url)
        assert "No such file or directory" in result.stdout
        with pytest.raises(Exception, match="HTTP 404.*missing.ctf"):
            read_all(url)


def test_a_glob_over_http_says_why_it_cannot_list(data):
    write_ctf(data / "a.ctf", LENGTHS)
    with servers.Nginx(data) as nginx:
        with pytest.raises(Exception, match="no standard listing"):
            read_all(nginx.url + "/*.ctf")


def test_5xx_answers_are_retried_with_backoff(data):
    write_ctf(data / "a.ctf", LENGTHS)
    expected = remote_read(str(data / "a.ctf"), "read:0:5000")
    assert expected[0].startswith("ok 5000 ")
    with servers.FailingServer(data, failures=3) as server:  # HEAD fails 3 times, then succeeds
        assert remote_read(server.url + "/a.ctf", "read:0:5000", env={"CNTKIO_REMOTE_TRIES": "4"}) == expected
        assert server.count >= 4


def test_a_range_that_keeps_failing_names_the_url_the_status_the_range_and_the_tries(data):
    write_ctf(data / "a.ctf", LENGTHS)
    with servers.FailingServer(data, failures=100, methods=("GET",), spare_open=True, ranges=True) as server:
        url = server.url + "/a.ctf"
        lines = remote_read(url, "read:5000:10", env=dict(SMALL_BLOCKS, CNTKIO_REMOTE_TRIES="3"))
        assert lines == ["error HTTP 503 reading bytes 4096-8191 (after 3 tries) of '%s': Input/output error" % url]


def test_a_file_changed_while_being_read_is_an_error_never_a_mix(data):
    path = data / "a.ctf"
    write_ctf(path, LENGTHS)
    with servers.Nginx(data) as nginx:
        url = nginx.url + "/a.ctf"

        def rewrite():  # same size, new content and time: a new ETag
            content = path.read_bytes()
            path.write_bytes(content.replace(b"|f", b"|g"))
            os.utime(path, (1e9, 1e9))

        lines = remote_read(url, "read:0:100", "wait", "read:8192:100", env=SMALL_BLOCKS, stdin_actions=[rewrite])
        assert lines[0].startswith("ok 100 ")
        assert lines[2].startswith("error the remote file changed while being read")
        assert "bytes 8192-%d" % (path.stat().st_size - 1) in lines[2] and url in lines[2]


def test_the_block_cache_is_bounded(data):
    write_ctf(data / "a.ctf", LENGTHS)
    ops = ("read:0:10", "read:4096:10", "read:8192:10", "read:0:10")
    for cache_bytes, fetches_of_block_0 in (("8192", 2), ("1048576", 1)):
        with servers.Nginx(data) as nginx:
            lines = remote_read(nginx.url + "/a.ctf", *ops, env=dict(SMALL_BLOCKS, CNTKIO_REMOTE_CACHE_BYTES=cache_bytes))
            assert all(line.startswith("ok 10 ") for line in lines), lines
            assert lines[0] == lines[3]
            gets = [r for r in nginx.requests() if r[0] == "GET"]
            assert sum(1 for r in gets if r[3] == "bytes=0-4095") == fetches_of_block_0, gets


def test_a_killed_server_gives_a_located_error_and_a_later_run_succeeds(data):
    write_ctf(data / "a.ctf", LENGTHS * 10)  # above 64 KiB: readers map it (a lazy mapping)
    env = dict(SMALL_BLOCKS, CNTKIO_REMOTE_TRIES="2")
    ops = ("map:0:10", "read:0:10", "wait", "read:8192:10", "map:65536:10")
    with servers.Nginx(data) as nginx:
        url = nginx.url + "/a.ctf"
        require_lazy_mapping(url)
        expected = remote_read(url, *ops, stdin_actions=[lambda: None], env=env)
        assert all(line.startswith("ok 10 ") for line in expected if line != "continued"), expected
        # The server dies after the file was opened and mapped: read_at fails at once, the mapping's block
        # surfaces at check_intact (core::MappedFile), both naming the URL.
        lines = remote_read(url, *ops, env=env, stdin_actions=[nginx.stop])
        assert lines[:3] == expected[:3]
        assert lines[3].startswith("error ") and "; reading bytes 8192-12287 (after 2 tries) of '%s'" % url in lines[3]
        assert "onnect" in lines[3]  # curl's "Failed to connect ... Couldn't connect to server"
        assert lines[4].startswith("error reading the mapped file failed (") and url in lines[4], lines[4]
        nginx.start()
        assert remote_read(url, *ops, stdin_actions=[lambda: None], env=env) == expected


def write_config(path, file, chunk=65536):
    path.write_text("""r = [
    reader = [
        readerType = "CNTKTextFormatReader"
        file = "%s"
        cacheIndex = true
        randomize = false
        chunkSizeInBytes = %d
        input = [ features = [ alias = "f" ; dim = 2 ; format = "dense" ] ]
    ]
]
""" % (file, chunk))
    return str(path)


def big_file_and_its_cache(data, tmp_path):
    """A CTF file of 40,000 sequences served from `data`, a cache folder, and an environment in which the bytes
    fetched are those the reader touches (64 KiB blocks, no read-ahead)."""
    path = data / "big.ctf"
    write_ctf(path, [1 + i % 4 for i in range(40000)])
    cache_dir = tmp_path / "cache"
    env = dict(os.environ, CNTKIO_CACHE_DIR=str(cache_dir), CNTKIO_REMOTE_BLOCK_SIZE="65536",
               CNTKIO_REMOTE_READ_AHEAD="0")
    return path, cache_dir, env


def test_the_index_cache_of_a_remote_file_is_local_and_a_second_process_reads_only_what_it_needs(data, tmp_path,
                                                                                                   cli):
    path, cache_dir, env = big_file_and_its_cache(data, tmp_path)
    size = path.stat().st_size
    assert size > 1 << 20
    with servers.Nginx(data) as nginx:
        require_lazy_mapping(nginx.url + "/big.ctf")
        config = write_config(tmp_path / "r.cntk", nginx.url + "/big.ctf")

        def dump():
            return dump_first_minibatch(cli, config, env)

        first = dump()
        first_bytes = nginx.bytes_sent("big.ctf")
        assert first_bytes >= size  # the index pass read the whole file
        caches = sorted(p.name for p in cache_dir.iterdir())
        assert len(caches) == 1 and caches[0].endswith("-big.ctf._.0.0.0.v1.cache"), caches
        assert not any(p.name.endswith(".cache") for p in data.iterdir())  # nothing written next to the data
        second = dump()
        second_bytes = nginx.bytes_sent("big.ctf") - first_bytes
        assert second == first
        assert second_bytes < size // 4, (second_bytes, size)
    assert first.count("\n") >= 10


def test_with_a_valid_index_cache_a_remote_file_opens_with_a_head_and_reads_only_its_first_minibatch(data, tmp_path,
                                                                                                    cli):
    path, _, env = big_file_and_its_cache(data, tmp_path)
    with servers.Nginx(data) as nginx:
        require_lazy_mapping(nginx.url + "/big.ctf")
        config = write_config(tmp_path / "r.cntk", nginx.url + "/big.ctf")
        first = dump_first_minibatch(cli, config, env)  # writes the cache
        before = nginx.requests()
        inspected = subprocess.run([cli, "inspect", "--config", config, "--section", "r", "--minibatches", "0"],
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert inspected.returncode == 0, inspected.stderr
        assert "index cache" in inspected.stdout and "(used)" in inspected.stdout, inspected.stdout
        assert "sequence ids" in inspected.stdout  # the line mode, read from the file when asked for
        inspected_requests = nginx.requests()[len(before):]
        # its identity (a HEAD), then the first block for the line mode: nothing else of the file
        assert [(r[0], r[3]) for r in inspected_requests] == [("HEAD", "-"), ("GET", "bytes=0-65535")], \
            inspected_requests
        assert dump_first_minibatch(cli, config, env) == first
        dumped = nginx.requests()[len(before) + len(inspected_requests):]
        assert dumped[0][0] == "HEAD" and all(r[0] == "GET" for r in dumped[1:]), dumped
        assert sum(r[4] for r in dumped) < path.stat().st_size // 4, dumped


def test_a_server_that_refuses_head_is_asked_with_a_get_of_the_first_block(data, tmp_path, cli):
    local = write_ctf(data / "a.ctf", LENGTHS)
    env = dict(os.environ, CNTKIO_CACHE_DIR=str(tmp_path / "cache"))
    with servers.FailingServer(data, failures=10**6, status=405, methods=("HEAD",), ranges=True) as server:
        remote = dump_first_minibatch(cli, write_config(tmp_path / "r.cntk", server.url + "/a.ctf"), env)
        assert server.count >= 1  # a HEAD was refused
    assert remote == dump_first_minibatch(cli, write_config(tmp_path / "l.cntk", local), env)


def test_a_will_need_hint_fetches_its_range_with_few_requests_that_the_mapping_then_reads(data):
    # A reader about to parse a chunk tells its mapping (FileMapping::will_need): the blocks come in requests of
    # CNTKIO_REMOTE_REQUEST_SIZE started at once, not block by block as the parse touches them.
    write_ctf(data / "a.ctf", LENGTHS * 30)
    size = (data / "a.ctf").stat().st_size
    assert size > 200000
    expected = remote_read(str(data / "a.ctf"), "map:0:131072")
    env = dict(SMALL_BLOCKS, CNTKIO_REMOTE_REQUEST_SIZE="65536")
    with servers.Nginx(data) as nginx:
        url = nginx.url + "/a.ctf"
        require_lazy_mapping(url)
        before = len(nginx.requests())
        lines = remote_read(url, "willneed:0:131072", "map:0:131072", env=env)
        assert lines == ["hinted"] + expected
        gets = [r[3] for r in nginx.requests()[before:] if r[0] == "GET"]
        # The open's GET brings block 0; blocks 1-31 come in two requests of 16 blocks.
        assert gets == ["bytes=0-4095", "bytes=4096-69631", "bytes=69632-131071"] or \
            gets == ["bytes=0-4095", "bytes=69632-131071", "bytes=4096-69631"], gets
        # Without the hint, each block the read touches is a request of its own (no read-ahead here).
        before = len(nginx.requests())
        assert remote_read(url, "map:0:131072", env=env) == expected
        assert len([r for r in nginx.requests()[before:] if r[0] == "GET"]) == 32


def test_a_ctf_chunk_load_fetches_the_chunk_with_few_requests(data, tmp_path, cli):
    path = data / "big.ctf"
    write_ctf(path, [1 + i % 4 for i in range(40000)])
    cache_dir = tmp_path / "cache"
    env = dict(os.environ, CNTKIO_CACHE_DIR=str(cache_dir), CNTKIO_REMOTE_BLOCK_SIZE="4096",
               CNTKIO_REMOTE_READ_AHEAD="0", CNTKIO_REMOTE_REQUEST_SIZE="65536")
    with servers.Nginx(data) as nginx:
        require_lazy_mapping(nginx.url + "/big.ctf")
        config = write_config(tmp_path / "r.cntk", nginx.url + "/big.ctf", chunk=65536)

        def dump():
            return dump_first_minibatch(cli, config, env)

        first = dump()  # writes the index cache
        before = len(nginx.requests())
        assert dump() == first
        gets = [r for r in nginx.requests()[before:] if r[0] == "GET"]
        # The open's GET, then about a request per chunk loaded (the first and the one loaded ahead), where
        # the parse's faults would make one per 4 KiB block (16 a chunk).
        assert 2 <= len(gets) <= 6, gets


def dump(cli, config, section, cwd, env=None, sets=()):
    args = [cli, "dump", "--config", str(config), "--section", section, "--mb-size", "16", "--max-minibatches",
            "100"]
    for s in sets:
        args += ["--set", s]
    result = subprocess.run(args, cwd=str(cwd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(env or {})))
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_htk_features_mlf_and_state_list_over_http_dump_as_the_local_files(cli, tmp_path):
    root = conformance_dir() / "data" / "HTKGenerated"
    config = (conformance_dir() / "config" / "HTKGenerated" / "frame.cntk").read_text()
    local = dump(cli, conformance_dir() / "config" / "HTKGenerated" / "frame.cntk", "FrameNoRand", root)
    with servers.Nginx(root) as nginx:
        # The SCP names its features by URL (archives with ranges too); the SCP, MLF and state list are URLs.
        scp = "".join(line.replace("=feat/", "=%s/feat/" % nginx.url) + "\n"
                      for line in (root / "feats.scp").read_text().splitlines())
        served = tmp_path / "served"
        served.mkdir()
        (served / "feats_url.scp").write_text(scp)
        with servers.Nginx(served) as lists:
            remote_config = tmp_path / "frame.cntk"
            remote_config.write_text(config.replace('"feats.scp"', '"%s/feats_url.scp"' % lists.url)
                                     .replace('"labels.mlf"', '"%s/labels.mlf"' % nginx.url)
                                     .replace('"states.list"', '"%s/states.list"' % nginx.url))
            remote = dump(cli, remote_config, "FrameNoRand", tmp_path)
            assert lists.bytes_sent("feats_url.scp") > 0
        for name in ("labels.mlf", "states.list", "feat/archive.ark", "feat/u03.htk"):
            assert nginx.bytes_sent(name) > 0, name
    assert remote == local
    assert remote.count("\n") > 50


@pytest.mark.skipif("ImageDeserializer" not in cntkio._core.known_deserializer_types(),
                    reason="the image format is left out of this build (CNTKIO_WITH_IMAGES=OFF)")
def test_an_image_map_file_and_its_images_over_http_dump_as_the_local_files(cli, tmp_path):
    data = conformance_dir() / "data"
    config = conformance_dir() / "config" / "ImageReaderSimple_Config.cntk"
    local = dump(cli, config, "Simple_Test", data)
    served = tmp_path / "served"
    (served / "images").mkdir(parents=True)
    for image in (data / "images").iterdir():
        (served / "images" / image.name).write_bytes(image.read_bytes())
    with servers.Nginx(served) as nginx:
        lines = (data / "ImageReaderSimple_map.txt").read_text().splitlines()
        (served / "ImageReaderSimple_map.txt").write_text("".join("%s/%s\n" % (nginx.url, line) for line in lines))
        remote = dump(cli, config, "Simple_Test", tmp_path, sets=["RootDir=%s" % nginx.url])
        assert nginx.bytes_sent("ImageReaderSimple_map.txt") > 0 and nginx.bytes_sent("images/") > 0
    assert remote == local


def test_writing_to_a_remote_path_is_refused_and_leaves_nothing(cli, tmp_path):
    data = conformance_dir() / "data" / "CNTKTextFormatReader"
    result = subprocess.run([cli, "dump", "--config", str(conformance_dir() / "config" / "CNTKTextFormatReader" /
                                                          "dense.cntk"),
                             "--section", "Simple", "--mb-size", "10", "--max-minibatches", "1",
                             "--output", "http://127.0.0.1:1/out.txt"], cwd=str(data), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert result.returncode != 0
    assert "cannot write 'http://127.0.0.1:1/out.txt': remote paths are read-only" in result.stderr
    assert not (data / "http:").exists()


def test_a_lazy_mapping_in_a_forked_child_is_an_error_not_zeros(data):
    write_ctf(data / "a.ctf", LENGTHS * 10)
    with servers.Nginx(data) as nginx:
        url = nginx.url + "/a.ctf"
        require_lazy_mapping(url)
        lines = remote_read(url, "map:0:10", "map:65536:10", "forkmap:0:10", "forkmap:90000:10", env=SMALL_BLOCKS)
        assert lines[0].startswith("ok 10 ") and lines[1].startswith("ok 10 ")
        # In the child, bytes the parent had fetched read as they are, but the mapping is incomplete there:
        # the check says so, whatever was read.
        for line in lines[2:]:
            assert line.startswith("error reading the mapped file failed (a remote file's mapping does not survive "
                                   "fork()"), line


def test_a_lazy_mapping_gives_back_its_oldest_blocks_past_its_budget_and_fetches_them_again(data):
    # A mapping's filled blocks are anonymous memory that no page cache takes back: past CNTKIO_REMOTE_MAP_BYTES
    # the oldest go, and a later touch fetches them again (the same bytes), so a remote corpus read through its
    # mappings does not stay in memory whole.
    write_ctf(data / "a.ctf", LENGTHS * 10)
    # Blocks 1 to 3: block 0 comes with the open's GET into the block cache, which a mapping copies from.
    ops = ("map:4096:10", "map:8192:10", "map:12288:10", "map:4096:10")
    tiny_cache = dict(SMALL_BLOCKS, CNTKIO_REMOTE_CACHE_BYTES="4096")  # the block cache keeps only the last block
    for map_bytes, fetches_of_block_1 in (("8192", 2), ("1048576", 1)):
        with servers.Nginx(data) as nginx:
            url = nginx.url + "/a.ctf"
            require_lazy_mapping(url)
            lines = remote_read(url, *ops, env=dict(tiny_cache, CNTKIO_REMOTE_MAP_BYTES=map_bytes))
            assert all(line.startswith("ok 10 ") for line in lines), lines
            assert lines[0] == lines[3]
            gets = [r for r in nginx.requests() if r[0] == "GET"]
            assert sum(1 for r in gets if r[3] == "bytes=4096-8191") == fetches_of_block_1, (map_bytes, gets)


def test_a_server_that_ignores_ranges_is_read_with_one_download_or_refused_when_the_file_outgrows_the_cache(data):
    # Python's http.server answers every ranged GET with the whole file (HTTP 200): that answer fills the block
    # cache, so the file is downloaded once; a file larger than the cache would be downloaded whole at every read.
    write_ctf(data / "a.ctf", LENGTHS * 10)
    size = (data / "a.ctf").stat().st_size
    expected = remote_read(str(data / "a.ctf"), "read:0:5000", "read:%d:100" % (size - 100))
    with servers.FailingServer(data, failures=0) as server:
        lines = remote_read(server.url + "/a.ctf", "read:0:5000", "read:%d:100" % (size - 100), env=SMALL_BLOCKS)
        assert lines == expected
        assert server.count == 1  # the open's GET brought the whole file
    with servers.FailingServer(data, failures=0) as server:
        lines = remote_read(server.url + "/a.ctf", "read:0:10",
                            env=dict(SMALL_BLOCKS, CNTKIO_REMOTE_CACHE_BYTES=str(size // 2)))
        assert len(lines) == 1 and lines[0].startswith("error "), lines
        assert "ignores Range requests" in lines[0] and "a.ctf" in lines[0], lines


def test_a_server_answering_other_bytes_than_asked_is_an_error_never_other_data(data):
    # a 206 whose Content-Range is not the range asked for (a shifting proxy), or has none, or gives a size no
    # storage holds: an IoError naming the URL, never those bytes read as the file's
    write_ctf(data / "a.ctf", LENGTHS * 10)
    size = (data / "a.ctf").stat().st_size
    with servers.FailingServer(data, failures=0, ranges=True, shift=1000) as server:
        lines = remote_read(server.url + "/a.ctf", "read:0:10", "read:%d:100" % (size - 100), env=SMALL_BLOCKS)
        assert len(lines) == 2 and lines[1].startswith("error "), lines
        assert "the server answered with bytes" in lines[1] and "a.ctf" in lines[1], lines
    for content_range, what in ((None, "no usable Content-Range"), ("bytes */%d" % size, "no usable Content-Range"),
                                ("bytes 0-9/4611686018427387904", "more than 1 PiB")):
        with servers.FailingServer(data, failures=0, ranges=True, content_range=content_range) as server:
            lines = remote_read(server.url + "/a.ctf", "read:0:10", env=SMALL_BLOCKS)
            assert len(lines) == 1 and lines[0].startswith("error ") and what in lines[0], (content_range, lines)


def test_a_file_changed_on_a_server_without_etags_is_an_error_never_a_mix(data):
    # servers such as Go's file server send Last-Modified but no ETag: the time tells the versions apart
    path = data / "a.ctf"
    write_ctf(path, LENGTHS)
    with servers.FailingServer(data, failures=0, ranges=True) as server:
        url = server.url + "/a.ctf"

        def rewrite():  # same size, new content and time
            content = path.read_bytes()
            path.write_bytes(content.replace(b"|f", b"|g"))
            os.utime(path, (1e9, 1e9))

        lines = remote_read(url, "read:0:100", "wait", "read:8192:100", env=SMALL_BLOCKS, stdin_actions=[rewrite])
        assert lines[0].startswith("ok 100 ")
        assert lines[2].startswith("error the remote file changed while being read"), lines
        assert "Last-Modified" in lines[2], lines


def test_an_encoded_answer_and_a_redirect_loop_are_errors_saying_so(data):
    write_ctf(data / "a.ctf", LENGTHS)
    with servers.FailingServer(data, failures=0, ranges=True, encoding="gzip") as server:
        lines = remote_read(server.url + "/a.ctf", "read:0:10", env=SMALL_BLOCKS)
        assert len(lines) == 1 and lines[0].startswith("error ") and "Content-Encoding 'gzip'" in lines[0], lines
    with servers.FailingServer(data, failures=0, ranges=True, redirect_loop=True) as server:
        lines = remote_read(server.url + "/a.ctf", "read:0:10", env=SMALL_BLOCKS)
        assert len(lines) == 1 and lines[0].startswith("error ") and "redirect" in lines[0].lower(), lines
        assert server.count <= 50  # a few redirects, not thousands, and not tried again


def test_a_fetch_that_fails_during_the_index_pass_is_an_io_error_not_a_format_error(data, tmp_path, cli):
    write_ctf(data / "a.ctf", LENGTHS * 10)
    with servers.FailingServer(data, failures=10 ** 6, methods=("GET",), spare_open=True, ranges=True) as server:
        url = server.url + "/a.ctf"
        require_lazy_mapping(url)
        config = tmp_path / "r.cntk"
        write_config(config, url)
        result = subprocess.run([cli, "dump", "--config", str(config), "--section", "r", "--mb-size", "10"],
                                env=dict(os.environ, CNTKIO_REMOTE_BACKOFF_MS="1", CNTKIO_REMOTE_TRIES="2",
                                         **SMALL_BLOCKS), capture_output=True, text=True)
        assert result.returncode == 5, result.stderr  # an IoError, not the format error of the zeros
        assert "HTTP 503" in result.stderr and url in result.stderr, result.stderr


def test_a_url_with_a_query_string_is_a_file_not_a_pattern(data):
    # a presigned URL: its '?' starts the query, and the server may refuse HEAD (S3 signs one method)
    local = write_ctf(data / "a.ctf", LENGTHS)
    with servers.FailingServer(data, failures=10 ** 6, status=403, methods=("HEAD",), ranges=True) as server:
        assert read_all(server.url + "/a.ctf?X-Amz-Signature=abc&X-Amz-Expires=60") == read_all(local)


def test_settings_that_are_not_whole_numbers_are_errors_naming_the_variable(data):
    write_ctf(data / "a.ctf", LENGTHS)
    with servers.FailingServer(data, failures=0, ranges=True) as server:
        for name, value, op in (("CNTKIO_REMOTE_TIMEOUT_S", "-5", "read:0:10"),
                                ("CNTKIO_REMOTE_MAP_BYTES", "abc", "map:0:10")):
            lines = remote_read(server.url + "/a.ctf", op, "mappable", env={name: value})
            assert any(line.startswith("error ") and name in line for line in lines), (name, lines)


def test_an_error_is_reported_without_waiting_for_fetches_nobody_needs_any_more(data, tmp_path, cli):
    # one fetch fails (403) while the others hang on the server: the reader stops at the failure, and the
    # fetches nobody needs any more are abandoned instead of running through their tries and time-outs
    # (here 4 x 5 s) before the error is said
    import time
    write_ctf(data / "a.ctf", LENGTHS * 60)
    with servers.FailingServer(data, failures=0, ranges=True, deny_then_hang=True) as server:
        url = server.url + "/a.ctf"
        config = tmp_path / "r.cntk"
        write_config(config, url)
        started = time.monotonic()
        result = subprocess.run([cli, "dump", "--config", str(config), "--section", "r", "--mb-size", "64",
                                 "--max-minibatches", "3"],
                                env=dict(os.environ, CNTKIO_REMOTE_BACKOFF_MS="1", CNTKIO_REMOTE_TIMEOUT_S="5",
                                         CNTKIO_REMOTE_BLOCK_SIZE="65536", CNTKIO_REMOTE_REQUEST_SIZE="65536"),
                                capture_output=True, text=True, timeout=120)
        elapsed = time.monotonic() - started
        assert result.returncode == 5 and "HTTP 403" in result.stderr, result.stderr
        assert elapsed < 10, elapsed


def test_a_cache_folder_that_cannot_be_written_only_costs_the_cache(data, tmp_path, cli):
    # CNTKIO_CACHE_DIR naming a URL, and a URL whose query makes a long name: read without an index cache
    local = write_ctf(data / "a.ctf", LENGTHS)
    with servers.FailingServer(data, failures=0, ranges=True) as server:
        expected = None
        for url, cache_dir in ((server.url + "/a.ctf", server.url + "/cache"),
                               (server.url + "/a.ctf?" + "x" * 400, str(tmp_path / "cache"))):
            config = tmp_path / "r.cntk"
            write_config(config, url)
            result = subprocess.run([cli, "dump", "--config", str(config), "--section", "r", "--mb-size", "10"],
                                    env=dict(os.environ, CNTKIO_CACHE_DIR=cache_dir), capture_output=True, text=True)
            assert result.returncode == 0, result.stderr
            expected = expected or result.stdout
            assert result.stdout == expected
    assert expected.count("\n") > 10 and os.path.getsize(local) > 0


def test_an_image_the_server_fails_to_give_is_an_io_error_not_a_missing_image(tmp_path):
    # a 503 after the retries is the storage's fault (OSError, exit 5), named with its map line; an image
    # that is not there stays CNTK's "Cannot open file" error
    from conftest import images_built
    if not images_built():
        pytest.skip("built without the image format")
    data = conformance_dir() / "data"
    served = tmp_path / "served"
    served.mkdir()
    (served / "black.jpg").write_bytes((data / "images" / "black.jpg").read_bytes())
    with servers.FailingServer(served, failures=10 ** 6) as server:
        mapped = tmp_path / "map.txt"
        mapped.write_text("%s/black.jpg\t0\n" % server.url)
        streams = cntkio.StreamDefs(image=cntkio.StreamDef(field="image", transforms=[]),
                                    label=cntkio.StreamDef(field="label", shape=2))
        source = cntkio.MinibatchSource(cntkio.ImageDeserializer(str(mapped), streams), randomize=False,
                                        max_sweeps=1)
        with pytest.raises(OSError, match=r"HTTP 503.*black\.jpg.*map\.txt', line 1") as caught:
            source.next_minibatch(1)
        assert not isinstance(caught.value, cntkio.FormatError)
