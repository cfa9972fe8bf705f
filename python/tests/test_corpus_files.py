"""A corpus of several CTF or CBF files read as one deserializer (issue #24): a list, a glob pattern, a config
array or a list file. The sequences are those of the files one after another; chunks never span files, so
the union is randomized, split across workers and checkpointed like one file, without loss or repetition."""

import os
import subprocess

import pytest

import cntkio
from conftest import write_ctf

LENGTHS = [1 + i % 4 for i in range(60)]


def streams():
    return cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2),
                             labels=cntkio.StreamDef(field="l", shape=5, is_sparse=True))


def write_shards(folder, count=3, per=20, with_ids=True):
    """Sequence i (over all shards) is in shard i // per; ids run on across shards (unique keys)."""
    paths = []
    for k in range(count):
        path = folder / ("shard%02d.ctf" % k)
        with open(path, "w") as out:
            for i in range(k * per, (k + 1) * per):
                for t in range(LENGTHS[i]):
                    label = " |l %d:%d" % (i % 5, i + 1) if t == 0 else ""
                    out.write("%s|f %d %d%s\n" % ("%d " % i if with_ids else "", i, t, label))
        paths.append(str(path))
    return paths


def read(source, size=7, partitions=1, index=0):
    out = []
    while True:
        mb = source.next_minibatch(size, num_data_partitions=partitions, partition_index=index)
        if not mb:
            return out
        out.append([(int(s[0, 0]), s.tolist()) for s in mb["features"].as_sequences()])


def ids(batches):
    return [i for batch in batches for i, _ in batch]


@pytest.fixture
def shards(tmp_path):
    return write_shards(tmp_path)


def test_a_list_of_files_reads_as_their_concatenation(shards, tmp_path):
    whole = write_ctf(tmp_path / "whole.ctf", LENGTHS)
    expected = read(cntkio.MinibatchSource(cntkio.CTFDeserializer(whole, streams()), randomize=False,
                                           max_sweeps=1))
    got = read(cntkio.MinibatchSource(cntkio.CTFDeserializer(shards, streams()), randomize=False, max_sweeps=1))
    assert got == expected


def test_a_glob_pattern_names_the_files_in_sorted_order(shards, tmp_path):
    by_list = read(cntkio.MinibatchSource(cntkio.CTFDeserializer(shards, streams()), randomize=False,
                                          max_sweeps=1))
    by_glob = read(cntkio.MinibatchSource(cntkio.CTFDeserializer(str(tmp_path / "shard*.ctf"), streams()),
                                          randomize=False, max_sweeps=1))
    assert by_glob == by_list


def test_chunks_never_span_files_and_a_randomized_sweep_reads_each_sequence_once(shards):
    source = cntkio.MinibatchSource(cntkio.CTFDeserializer(shards, streams()), max_sweeps=1, randomization_seed=3)
    got = ids(read(source))
    assert sorted(got) == list(range(60)) and got != list(range(60))
    # a window of one chunk: every chunk is read out before the next, and each file is one chunk of its own
    source = cntkio.MinibatchSource(cntkio.CTFDeserializer(shards, streams()), max_sweeps=1, randomization_seed=3,
                                    randomization_window_in_chunks=1)
    got = ids(read(source))
    assert sorted(got) == list(range(60))
    assert [sorted({i // 20 for i in got[k:k + 20]}) for k in (0, 20, 40)] in ([[0], [1], [2]], [[0], [2], [1]],
                                                                              [[1], [0], [2]], [[1], [2], [0]],
                                                                              [[2], [0], [1]], [[2], [1], [0]])


def test_two_workers_split_the_files_without_loss(shards):
    seen = []
    for rank in range(2):
        source = cntkio.MinibatchSource(cntkio.CTFDeserializer(shards, streams()), max_sweeps=1,
                                        randomization_seed=1)
        seen += ids(read(source, 8, 2, rank))
    assert sorted(seen) == list(range(60))


def test_restore_mid_sweep_equals_the_uninterrupted_run(shards):
    def make():
        return cntkio.MinibatchSource(cntkio.CTFDeserializer(shards, streams()), max_sweeps=2, randomization_seed=5)

    uninterrupted = read(make())
    source = make()
    head = [source.next_minibatch(7) for _ in range(5)]
    restored = make()
    restored.restore_from_checkpoint(source.get_checkpoint_state())
    assert uninterrupted[5:] == read(restored)
    assert len(head) == 5


def test_a_config_array_and_a_list_file(shards, tmp_path):
    listed = tmp_path / "shards.txt"
    listed.write_text("# the corpus\n%s\n\n%s\n" % ("shard01.ctf", shards[2]))  # relative to the list's folder
    config = tmp_path / "c.cntk"
    config.write_text('''
R = [ reader = [ randomize = false ; deserializers = ( [ type = "CNTKTextFormatDeserializer"
  file = ("%s":"%s") ; input = [ features = [ alias = f ; dim = 2 ; format = dense ] ; labels = [ alias = l ; dim = 5 ; format = sparse ] ]
] ) ] ]
L = [ reader = [ randomize = false ; deserializers = ( [ type = "CNTKTextFormatDeserializer"
  file = "%s" ; fileList = "%s" ; input = [ features = [ alias = f ; dim = 2 ; format = dense ] ; labels = [ alias = l ; dim = 5 ; format = sparse ] ]
] ) ] ]
''' % (shards[0], shards[1], shards[0], listed))
    by_array = read(cntkio.MinibatchSource.from_config(str(config), "R", max_sweeps=1))
    assert ids(by_array) == list(range(40))
    by_list = read(cntkio.MinibatchSource.from_config(str(config), "L", max_sweeps=1))
    assert ids(by_list) == list(range(60))


def test_config_text_of_a_corpus_reads_the_same(shards, tmp_path):
    source = cntkio.MinibatchSource(cntkio.CTFDeserializer(shards, streams()), randomize=False, max_sweeps=1)
    config = tmp_path / "again.cntk"
    config.write_text("R = [\n%s\n]\n" % source.config_text)
    assert read(cntkio.MinibatchSource.from_config(str(config), "R", max_sweeps=1)) == read(source)


def test_a_key_two_files_hold_is_an_error_naming_both_when_joined_by_key(tmp_path):
    first, second = write_shards(tmp_path, 2), None
    second = tmp_path / "again.ctf"
    second.write_text("5 |f 0 0\n")  # key 5 is in shard00 already
    labels = tmp_path / "labels.ctf"
    labels.write_text("".join("%d |l %d:1\n" % (i, i % 5) for i in range(40)))
    primary = cntkio.CTFDeserializer(str(labels), cntkio.StreamDefs(labels=cntkio.StreamDef(field="l", shape=5,
                                                                                          is_sparse=True)))
    secondary = cntkio.CTFDeserializer(first + [str(second)], cntkio.StreamDefs(features=cntkio.StreamDef(
        field="f", shape=2)))
    with pytest.raises(cntkio.FormatError, match=r"held by two files") as caught:
        read(cntkio.MinibatchSource([primary, secondary], randomize=False, max_sweeps=1))
    assert "shard00.ctf" in str(caught.value) and "again.ctf" in str(caught.value)


def test_a_pattern_that_matches_nothing_is_an_oserror_naming_it(tmp_path):
    with pytest.raises(OSError, match=r"no data file matches the pattern.*nothing\*\.ctf"):
        cntkio.MinibatchSource(cntkio.CTFDeserializer(str(tmp_path / "nothing*.ctf"), streams()))


def test_a_file_named_twice_and_an_empty_list_are_refused(shards):
    with pytest.raises(cntkio.ConfigError, match="named twice"):
        cntkio.MinibatchSource(cntkio.CTFDeserializer([shards[0], shards[0]], streams()))
    with pytest.raises(ValueError, match="list of data files is empty"):
        cntkio.CTFDeserializer([], streams())


def test_files_with_different_streams_are_refused(tmp_path, cli):
    a = tmp_path / "a.cbf"
    b = tmp_path / "b.cbf"
    (tmp_path / "a.ctf").write_text("0 |x 1 2\n1 |x 3 4\n")
    (tmp_path / "b.ctf").write_text("0 |y 1 2\n")
    subprocess.run([cli, "convert", "--quiet", "--stream", "x:x:2:dense", str(tmp_path / "a.ctf"), str(a)],
                   check=True)
    subprocess.run([cli, "convert", "--quiet", "--stream", "y:y:2:dense", str(tmp_path / "b.ctf"), str(b)],
                   check=True)
    with pytest.raises(cntkio.FormatError, match="streams differ"):
        cntkio.MinibatchSource(cntkio.CBFDeserializer([str(a), str(b)]))


def test_a_cbf_corpus_reads_as_its_files_one_after_another(shards, tmp_path, cli):
    cbfs = []
    for path in shards:
        out = path.replace(".ctf", ".cbf")
        subprocess.run([cli, "convert", "--quiet", "--stream", "features:f:2:dense", "--stream",
                        "labels:l:5:sparse", path, out], check=True)
        cbfs.append(out)
    from_ctf = read(cntkio.MinibatchSource(cntkio.CTFDeserializer(shards, streams()), randomize=False,
                                           max_sweeps=1))
    from_cbf = read(cntkio.MinibatchSource(cntkio.CBFDeserializer(str(tmp_path / "shard*.cbf")), randomize=False,
                                           max_sweeps=1))
    assert from_cbf == from_ctf


def test_the_same_file_under_another_spelling_is_refused_not_read_twice(shards, tmp_path):
    link = tmp_path / "link.ctf"
    link.symlink_to(shards[0])
    for other in (os.path.join(os.path.dirname(shards[0]), ".", os.path.basename(shards[0])), str(link)):
        with pytest.raises(cntkio.ConfigError, match="are the same file"):
            cntkio.MinibatchSource(cntkio.CTFDeserializer([shards[0], other], streams()), randomize=False)


def test_a_nul_byte_in_a_list_file_is_an_error_at_its_line(shards, tmp_path):
    listed = tmp_path / "shards.txt"
    listed.write_bytes(b"shard00.ctf\nshard\x0001.ctf\n")
    config = tmp_path / "c.cntk"
    config.write_text('''
L = [ reader = [ randomize = false ; deserializers = ( [ type = "CNTKTextFormatDeserializer"
  fileList = "%s" ; input = [ features = [ alias = f ; dim = 2 ; format = dense ] ]
] ) ] ]
''' % listed)
    with pytest.raises(cntkio.FormatError, match=r"holds a NUL byte.*shards\.txt', line 2, column 6"):
        cntkio.MinibatchSource.from_config(str(config), "L", max_sweeps=1)


def test_a_corpus_with_more_files_than_may_be_open_says_so(tmp_path, cli):
    import resource
    folder = tmp_path / "shards"
    folder.mkdir()
    for k in range(120):
        (folder / ("s%03d.ctf" % k)).write_text("%d |f %d 0\n" % (k, k))
    config = tmp_path / "c.cntk"
    config.write_text('R = [ reader = [ randomize = false ; deserializers = ( [ type = "CNTKTextFormatDeserializer"\n'
                      '  file = "%s/s*.ctf" ; input = [ f = [ dim = 2 ; format = dense ] ] ] ) ] ]\n' % folder)

    def few_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    result = subprocess.run([cli, "dump", "--config", str(config), "--section", "R", "--mb-size", "10"],
                            capture_output=True, text=True, preexec_fn=few_files)
    assert result.returncode == 5, result.stderr
    assert "ulimit -n" in result.stderr and "of the corpus's 120" in result.stderr, result.stderr
    result = subprocess.run([cli, "dump", "--config", str(config), "--section", "R", "--mb-size", "10"],
                            capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.count("\n") > 10, result.stderr
