"""The cntk.io arguments and their semantics (spec pipeline.md §1.3, §4, §8.3, §9) through cntkio's surface."""

import json
import os
import threading
import warnings

import numpy as np
import pytest

import cntkio
from conftest import ctf_source, read_all, sequence_ids, write_ctf

LENGTHS = [1 + i % 4 for i in range(10)]  # 25 samples in 10 sequences


@pytest.fixture
def data(tmp_path):
    return write_ctf(tmp_path / "data.ctf", LENGTHS)


def flatten(batches):
    return [i for ids, _ in batches for i in ids]


def test_no_randomization_reads_file_order_with_exact_arrays(data):
    source = ctf_source(data, randomize=False, max_sweeps=1)
    mb = source.next_minibatch(7)
    f, l = mb[source.streams.features], mb[source.streams["labels"]]
    assert sequence_ids(mb) == [0, 1, 2]  # lengths 1, 2, 3: 6 samples; the 4th (4 samples) would exceed 7
    assert (f.num_sequences, f.num_samples, f.shape) == (3, 6, (3, 3, 2))
    expected = np.zeros((3, 3, 2), np.float32)
    for i in range(3):
        expected[i, :i + 1, 0] = i
        expected[i, :i + 1, 1] = np.arange(i + 1)
    assert f.asarray().dtype == np.float32 and (f.asarray() == expected).all()
    assert f.mask.tolist() == [[2, 0, 0], [2, 1, 0], [2, 1, 1]]
    assert [s.tolist() for s in f.as_sequences()] == [expected[i, :i + 1].tolist() for i in range(3)]
    assert f.keys == ["0", "1", "2"]
    assert l.is_sparse and not f.is_sparse
    assert l.asarray().shape == (3, 5) and l.asarray().toarray().tolist() == [
        [1, 0, 0, 0, 0], [0, 2, 0, 0, 0], [0, 0, 3, 0, 0]]
    assert l.offsets.tolist() == [0, 1, 2, 3] and l.shape == (3, 1, 5)
    assert len(f) == 3 and not f.end_of_sweep


def test_dense_arrays_view_the_reader_buffer(data):
    source = ctf_source(data, randomize=False, max_sweeps=1)
    mb = source.next_minibatch(1)  # one sequence, one row: the buffer is the array
    assert mb["features"].zero_copy and not mb["features"].asarray().flags.owndata
    assert mb["labels"].zero_copy
    mb2 = source.next_minibatch(1)
    del source
    assert mb["features"].asarray()[0, 0].tolist() == [0, 0]  # the array keeps its minibatch alive
    assert mb2["features"].asarray()[0, :, 0].tolist() == [1, 1]


def test_max_samples_ends_after_the_sequence_crossing_the_limit(data):
    source = ctf_source(data, randomize=False, max_samples=7)
    # sequences start at 0, 1, 3, 6, 10: those starting below 7 are read
    assert flatten(read_all(source, 3)) == [0, 1, 2, 3]
    assert source.next_minibatch(3) == {}


def test_full_data_sweep_and_max_sweeps(data):
    assert flatten(read_all(ctf_source(data, randomize=False, max_samples=cntkio.FULL_DATA_SWEEP), 4)) == \
        list(range(10))
    assert flatten(read_all(ctf_source(data, randomize=False, max_sweeps=3), 4)) == list(range(10)) * 3


def test_max_samples_and_max_sweeps_are_exclusive(data):
    with pytest.raises(ValueError, match="mutually exclusive"):
        ctf_source(data, max_samples=10, max_sweeps=1)


def test_end_of_sweep_flags_on_minibatches_that_reach_or_cross_the_sweep_end(tmp_path):
    path = write_ctf(tmp_path / "ones.ctf", [1] * 10)
    batches = read_all(ctf_source(path, randomize=False, max_sweeps=2), 3)
    assert batches == [([0, 1, 2], False), ([3, 4, 5], False), ([6, 7, 8], False), ([9, 0, 1], True),
                       ([2, 3, 4], False), ([5, 6, 7], False), ([8, 9], True)]


def test_randomization_seed_changes_the_order_and_each_sweep_is_a_permutation(data):
    def order(seed):
        return flatten(read_all(ctf_source(data, randomization_seed=seed, randomization_window_in_samples=100,
                                           max_sweeps=2), 4))

    zero, one = order(0), order(1)
    assert zero == order(0)
    assert zero != one
    for o in (zero, one):
        assert sorted(o[:10]) == list(range(10)) and sorted(o[10:]) == list(range(10))
        assert o[:10] != o[10:]  # sweep k is shuffled with seed + k
    assert zero[10:] == one[:10]  # ... so sweep 1 of seed 0 is sweep 0 of seed 1
    assert zero != list(range(10)) * 2


def test_randomization_windows(data):
    both = dict(randomization_window_in_chunks=4, randomization_window_in_samples=10)
    with pytest.raises(ValueError, match="mutually exclusive"):
        ctf_source(data, **both)
    assert "randomize = 0" in ctf_source(data, randomize=False, **both).config_text
    text = ctf_source(data, randomization_window_in_samples=10).config_text
    assert "randomizationWindow = 10\nsampleBasedRandomizationWindow = 1" in text
    text = ctf_source(data, randomization_window_in_chunks=3, randomization_seed=5).config_text
    assert "randomizationWindow = 3\nsampleBasedRandomizationWindow = 0\nrandomizationSeed = 5" in text
    assert "randomize = 0" in ctf_source(data, randomization_window_in_chunks=0).config_text


def test_trace_level_multithreading_and_max_errors_reach_the_config(data):
    text = ctf_source(data, trace_level=cntkio.TraceLevel.Error, multithreaded_deserializer=True,
                      max_errors=3).config_text
    assert "traceLevel = 0" in text and "multiThreadedDeserialization = 1" in text and "maxErrors = 3" in text
    text = ctf_source(data).config_text
    assert "traceLevel = 1" in text and "multiThreaded" not in text and "maxErrors" not in text
    single = flatten(read_all(ctf_source(data, multithreaded_deserializer=False, max_sweeps=1), 5))
    multi = flatten(read_all(ctf_source(data, multithreaded_deserializer=True, max_sweeps=1), 5))
    assert single == multi


def test_checkpoint_round_trip_continues_exactly(data):
    source = ctf_source(data, randomization_window_in_samples=100, max_sweeps=3)
    head = [source.next_minibatch(4) for _ in range(5)]
    state = source.get_checkpoint_state()
    assert state["minibatchSourcePosition"] == sum(LENGTHS[i] for mb in head for i in sequence_ids(mb))
    assert source.current_position == state
    rest = flatten(read_all(source, 4))
    again = ctf_source(data, randomization_window_in_samples=100, max_sweeps=3)
    again.restore_from_checkpoint(state)
    assert flatten(read_all(again, 4)) == rest
    third = ctf_source(data, randomization_window_in_samples=100, max_sweeps=3)
    third.current_position = json.loads(json.dumps(state))
    assert flatten(read_all(third, 4)) == rest


@pytest.mark.parametrize("randomize", [False, True])
def test_partitions_read_every_sequence_exactly_once(tmp_path, randomize):
    lengths = [1 + i % 3 for i in range(60)]
    path = write_ctf(tmp_path / "p.ctf", lengths)
    config = tmp_path / "p.cntk"  # small chunks, so randomized partitions get whole chunks each
    config.write_text('r = [ reader = [ randomize = %s ; randomizationWindow = 2 ; sampleBasedRandomizationWindow '
                      '= false\n deserializers = ( [ type = CNTKTextFormatDeserializer ; file = "%s" ; '
                      'chunkSizeInBytes = 120 ; input = [ features = [ alias = f ; dim = 2 ; format = dense ] ] ] ) ] ]\n'
                      % ("true" if randomize else "false", path))
    seen = []
    per_partition = []
    for p in range(3):
        source = cntkio.MinibatchSource.from_config(str(config), "r", max_sweeps=1)
        ids = flatten(read_all(source, 6, num_data_partitions=3, partition_index=p))
        per_partition.append(len(ids))
        seen += ids
    assert sorted(seen) == list(range(60))
    assert all(n > 0 for n in per_partition)


def test_partition_arguments_are_checked(data):
    with pytest.raises(ValueError, match="partition_index 2 is not below num_data_partitions 2"):
        ctf_source(data).next_minibatch(4, num_data_partitions=2, partition_index=2)
    with pytest.raises(ValueError, match="minibatch_size_in_samples must be a positive integer"):
        ctf_source(data).next_minibatch(0)


def test_frame_mode_gives_samples_by_shape(tmp_path):
    path = write_ctf(tmp_path / "frames.ctf", [1] * 6)
    source = ctf_source(path, randomize=False, frame_mode=True, max_sweeps=1)
    mb = source.next_minibatch(4)
    f, l = mb["features"], mb["labels"]
    # CNTK's Value keeps the sequence axis: [samples, 1, *shape], mask [samples, 1]
    assert f.shape == (4, 1, 2) and f.asarray().shape == (4, 1, 2) and f.asarray()[:, 0, 0].tolist() == [0, 1, 2, 3]
    assert f.mask.shape == (4, 1) and (f.mask == 2).all() and f.data.masked_count() == 0
    assert l.shape == (4, 1, 5) and l.asarray().shape == (4, 5)  # sparse: one csr row per sample
    assert l.asarray().toarray()[:, :4].tolist() == np.diag([1, 2, 3, 4]).tolist()
    assert [s.shape for s in f.as_sequences()] == [(1, 2)] * 4
    assert source.next_minibatch(4)["features"].shape == (2, 1, 2)
    with pytest.raises(ValueError, match="mutually exclusive"):
        ctf_source(path, frame_mode=True, truncation_length=2)


def test_frame_mode_refuses_sequences_with_a_format_error(data):
    with pytest.raises(cntkio.FormatError, match="non-frame sequence of size 2"):
        ctf_source(data, randomize=False, frame_mode=True).next_minibatch(4)


def test_truncation_length_packs_slots_that_continue_across_minibatches(tmp_path):
    path = write_ctf(tmp_path / "bptt.ctf", [5, 3, 4])
    source = cntkio.MinibatchSource(cntkio.CTFDeserializer(path, cntkio.StreamDefs(
        features=cntkio.StreamDef(field="f", shape=2))), randomize=False, truncation_length=2, max_sweeps=1)
    steps, masks, pieces = [], [], []
    while True:
        mb = source.next_minibatch(4)  # 4 / 2 = 2 slots of 2 steps
        if not mb:
            break
        f = mb["features"]
        assert f.shape == (2, 2, 2)
        steps.append(f.asarray()[:, :, 1].tolist())
        masks.append(f.mask.tolist())
        pieces.append([(int(s[0, 0]), s[:, 1].tolist()) for s in f.as_sequences()])
    # slot 0: sequence 0 (5 steps) then 2 (4 steps); slot 1: sequence 1 (3 steps) then nothing... in delivery
    assert pieces == [[(0, [0, 1]), (1, [0, 1])], [(0, [2, 3]), (1, [2]), (2, [0])], [(0, [4]), (2, [1, 2])],
                      [(2, [3])]]
    assert masks == [[[2, 1], [2, 1]], [[1, 1], [1, 2]], [[1, 0], [1, 1]], [[0, 0], [1, 0]]]
    assert steps[1] == [[2, 3], [2, 0]]


def test_input_map_and_stream_information(data):
    source = ctf_source(data, randomize=False)
    info = source.stream_info("features")
    assert source["features"] is info and source.streams.features is info
    assert (info.name, info.m_name, info.storage_format, info.dtype, info.shape) == \
        ("features", "features", "dense", np.float32, (2,))
    assert source.streams.labels.is_sparse and source.streams.labels.shape == (5,)
    assert [i.name for i in source.stream_infos()] == ["features", "labels"]
    mb = source.next_minibatch(3, input_map={"x": source.streams.features, "y": "labels"})
    assert set(mb) == {"x", "y"} and mb["x"].num_sequences == 2 and mb["y"].is_sparse
    with pytest.raises(ValueError, match="no stream named 'nope'"):
        source.stream_info("nope")


def test_sample_shape_of_a_dense_stream(tmp_path):
    path = tmp_path / "shaped.ctf"
    path.write_text("0 |x 1 2 3 4 5 6\n1 |x 7 8 9 10 11 12\n")
    source = cntkio.MinibatchSource(cntkio.CTFDeserializer(str(path), cntkio.StreamDefs(
        x=cntkio.StreamDef(field="x", shape=(2, 3)))), randomize=False)
    mb = source.next_minibatch(2)
    assert source.streams.x.shape == (2, 3)
    assert mb["x"].asarray().tolist() == [[[[1, 2, 3], [4, 5, 6]]], [[[7, 8, 9], [10, 11, 12]]]]


def test_errors_carry_locations(tmp_path):
    bad = tmp_path / "bad.ctf"
    bad.write_text("0 |f 1 2\n1 |f 1 x\n")
    with pytest.raises(cntkio.FormatError) as e:
        read_all(ctf_source(str(bad), randomize=False, max_sweeps=1), 10)
    assert isinstance(e.value, ValueError)
    assert e.value.file == str(bad) and e.value.line == 1 and "bad.ctf" in str(e.value)  # sequence 0 lacks labels
    assert e.value.cntk_text in str(e.value)
    with pytest.raises(FileNotFoundError) as missing:
        ctf_source(str(tmp_path / "missing.ctf"))
    assert isinstance(missing.value, OSError) and "missing.ctf" in str(missing.value)
    with pytest.raises(ValueError, match="stream name for key features must be specified"):
        cntkio.CTFDeserializer("x.ctf", cntkio.StreamDefs(features=cntkio.StreamDef(shape=2)))
    quoted = cntkio.CTFDeserializer('a"b.ctf', cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2)))
    with pytest.raises(ValueError, match="cannot express"):  # the reader reads it; only the config text cannot
        quoted.config_text()
    config = tmp_path / "c.cntk"
    config.write_text("r = [ reader = [\n  readerType = CNTKTextFormatReader\n  file = x.ctf\n"
                      "  input = [ f = [ dim = 0 ] ]\n] ]\n")
    with pytest.raises(cntkio.ConfigError) as c:
        cntkio.MinibatchSource.from_config(str(config), "r")
    assert isinstance(c.value, ValueError) and "c.cntk" in str(c.value)


def test_from_config_reads_brainscript_epochs_and_overrides(tmp_path, data):
    config = tmp_path / "e.cntk"
    config.write_text('T = [ reader = [ readerType = CNTKTextFormatReader ; file = "%s" ; randomize = false\n'
                      ' input = [ features = [ alias = f ; dim = 2 ; format = dense ] ; labels = [ alias = l ; dim = 5 ; '
                      'format = sparse ] ] ] ]\n' % data)
    source = cntkio.MinibatchSource.from_config(str(config), "T", max_sweeps=1)
    epoch1 = [sequence_ids(mb) for mb in source.epoch_minibatches(5, epoch_index=1, epoch_size=10)]
    assert epoch1 == [[4, 5], [6], [7]]  # sequences starting in [10, 20): 4 (at 10), 5 (11), 6 (13), 7 (16)
    assert flatten(read_all(source, 100)) == list(range(10))  # cntk.io reading after it starts from the top
    framed = cntkio.MinibatchSource.from_config(str(config), "T", ["T=[reader=[frameMode=true]]"])
    with pytest.raises(cntkio.FormatError):
        framed.next_minibatch(5)


def test_reading_releases_the_gil(tmp_path):
    path = write_ctf(tmp_path / "big.ctf", [3] * 60000)
    source = ctf_source(path, randomize=False, max_sweeps=1)
    ticks = []
    started, done = threading.Event(), threading.Event()

    def read():
        started.set()
        source.next_minibatch(10 ** 6)  # one call parses and packs all 180000 samples
        done.set()

    reader = threading.Thread(target=read)
    reader.start()
    started.wait()
    while not done.is_set():
        ticks.append(1)  # this thread runs during that one call only if the call released the GIL
        done.wait(0.0002)
    reader.join()
    assert len(ticks) >= 5


def test_a_forked_process_may_drop_but_not_use_an_inherited_source(data):
    import os
    import time

    source = ctf_source(data, randomize=False)
    source.next_minibatch(4)  # the reader now has a prefetch read in flight on its own thread
    pid = os.fork()
    if pid == 0:  # child: the inherited reader has no threads here
        code = 1
        try:
            source.next_minibatch(4)
        except ValueError as e:
            code = 0 if "created in another process" in str(e) else 2
        del source  # must not wait for the parent's threads
        os._exit(code)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked process hung destroying the inherited source")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert sequence_ids(source.next_minibatch(4)) == [2]  # the parent's source is untouched


def _composite_with_missing_keys(tmp_path, missing):
    primary = tmp_path / "p.ctf"
    secondary = tmp_path / "s.ctf"
    primary.write_text("".join("%d |a %d\n" % (i, i) for i in range(12)))
    secondary.write_text("".join("%d |b %d\n" % (i, 10 * i) for i in range(12) if i not in missing))
    return [cntkio.CTFDeserializer(str(primary), cntkio.StreamDefs(a=cntkio.StreamDef(field="a", shape=1))),
            cntkio.CTFDeserializer(str(secondary), cntkio.StreamDefs(b=cntkio.StreamDef(field="b", shape=1)))]


def test_sequences_a_composite_join_drops_are_reported_and_warned_once(tmp_path):
    deserializers = _composite_with_missing_keys(tmp_path, {3, 7, 8})
    with pytest.warns(cntkio.SkippedDataWarning, match=r"3 sequences.*sequence 3 \(its key is missing"):
        source = cntkio.MinibatchSource(deserializers, randomize=False, max_sweeps=2)
    report = source.skip_report()
    assert report and report.sequences_skipped == 3 and report.errors == 0
    assert [location.split()[1] for location in report.first_locations] == ["3", "7", "8"]
    assert "skipped 0 rows, 0 samples and 3 sequences" in str(report)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per source: reading on warns no more
        keys = []
        while True:
            mb = source.next_minibatch(5)
            if not mb:
                break
            keys += mb[source.streams.a].keys
    assert keys == ["0", "1", "2", "4", "5", "6", "9", "10", "11"] * 2


def test_a_reader_that_skipped_nothing_reports_nothing_and_does_not_warn(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        source = cntkio.MinibatchSource(_composite_with_missing_keys(tmp_path, set()), randomize=False,
                                        max_sweeps=1)
        while source.next_minibatch(4):
            pass
    report = source.skip_report()
    assert not report and report.sequences_skipped == 0 and report.first_locations == []


def test_rows_skipped_under_max_errors_warn_at_the_sweep_end(tmp_path):
    path = tmp_path / "bad.ctf"
    path.write_text("0 |x 1 2\n1 |x 3 oops\n1 |x 3 4\n2 |x 5 6\n")
    config = tmp_path / "r.cntk"
    config.write_text('T = [ reader = [ readerType = CNTKTextFormatReader ; file = "%s" ; randomize = false\n'
                      "  maxErrors = 5 ; traceLevel = 0 ; input = [ x = [ dim = 2 ; format = dense ] ] ] ]\n" % path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is known to be skipped before the chunk is read
        source = cntkio.MinibatchSource.from_config(str(config), "T", max_sweeps=1)
    with pytest.warns(cntkio.SkippedDataWarning, match=r"skipped 1 row, 1 sample .*; first at \S*bad\.ctf:2:8"):
        values = []
        while True:
            mb = source.next_minibatch(10)
            if not mb:
                break
            values.append(mb[source.streams.x].asarray())
    report = source.skip_report()
    assert report.rows_skipped == 1 and report.first_locations[0] == str(path) + ":2:8"
    assert np.concatenate(values).reshape(-1, 2).tolist() == [[1, 2], [3, 4], [5, 6]]


def test_stream_names_that_differ_only_in_case_are_refused(data):
    """Config keys match ignoring case: `x` and `X` would be one stream, the other's definition lost."""
    with pytest.raises(ValueError, match="differ only in case"):
        cntkio.CTFDeserializer(data, cntkio.StreamDefs(x=cntkio.StreamDef(field="f", shape=2),
                                                       X=cntkio.StreamDef(field="l", shape=5, is_sparse=True)))
    with pytest.raises(ValueError, match="differ only in case"):
        cntkio.CBFDeserializer("d.cbf", cntkio.StreamDefs(a=cntkio.StreamDef(field="f"),
                                                          A=cntkio.StreamDef(field="l")))


def test_a_skip_warning_turned_into_an_error_loses_no_minibatch(tmp_path):
    """The warning comes before the read after a sweep's end (or when reading stops), never with a
    minibatch: raised as an error and caught, it costs no data."""
    path = tmp_path / "bad.ctf"
    path.write_text("0 |x 1 2\n1 |x 3 oops\n1 |x 3 4\n2 |x 5 6\n")
    config = tmp_path / "r.cntk"
    config.write_text('T = [ reader = [ readerType = CNTKTextFormatReader ; file = "%s" ; randomize = false\n'
                      "  maxErrors = 5 ; traceLevel = 0 ; input = [ x = [ dim = 2 ; format = dense ] ] ] ]\n" % path)
    source = cntkio.MinibatchSource.from_config(str(config), "T", max_sweeps=2)
    values, raised = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", cntkio.SkippedDataWarning)
        while True:
            try:
                mb = source.next_minibatch(2)
            except cntkio.SkippedDataWarning:
                raised += 1
                continue
            if not mb:
                break
            values.extend(mb[source.streams.x].asarray().reshape(-1, 2).tolist())
    assert raised == 1
    assert values == [[1, 2], [3, 4], [5, 6]] * 2


def test_counts_beyond_64_bits_and_bad_checkpoint_positions_are_value_errors(data):
    source = ctf_source(data, randomize=False, max_sweeps=1)
    with pytest.raises(ValueError, match="below 2\\*\\*64"):
        source.next_minibatch(2 ** 70)
    for position in (-1, 5.5, 2 ** 64, 10 ** 30):  # would have wrapped or been cut to another position
        with pytest.raises(ValueError, match="whole number"):
            ctf_source(data, randomize=False).restore_from_checkpoint({"minibatchSourcePosition": position})


def test_a_checkpoint_taken_right_after_a_restore_holds_the_restored_position(tmp_path):
    # get_checkpoint_state() before the first read after restore_from_checkpoint() must say where the reader
    # stands (it said 0: a job that checkpoints before its first minibatch rewound to the start)
    path = write_ctf(tmp_path / "d.ctf", [1] * 10)
    first = ctf_source(path, randomize=False)
    for _ in range(3):
        first.next_minibatch(2)
    saved = first.get_checkpoint_state()
    resumed = ctf_source(path, randomize=False)
    resumed.restore_from_checkpoint(saved)
    assert resumed.get_checkpoint_state() == saved
    assert resumed.current_position == saved
    again = ctf_source(path, randomize=False)
    again.restore_from_checkpoint(resumed.get_checkpoint_state())
    assert sequence_ids(again.next_minibatch(2)) == [6, 7]


def test_a_cntk_checkpoint_of_the_position_alone_splits_workers_as_the_run_that_took_it(tmp_path):
    # CNTK's checkpoints hold minibatchSourcePosition only; without randomization the worker shares follow a
    # running sequence counter, which CNTK's SetState sets to the sequence's index within its sweep
    path = write_ctf(tmp_path / "d.ctf", [1] * 10)
    uninterrupted = ctf_source(path, randomize=False, max_sweeps=1)
    expected = []
    for n in range(5):
        mb = uninterrupted.next_minibatch(2, num_data_partitions=2, partition_index=0)
        if n >= 2:
            expected.append(sequence_ids(mb))
    resumed = ctf_source(path, randomize=False, max_sweeps=1)
    resumed.restore_from_checkpoint({"minibatchSourcePosition": 4})
    got = [sequence_ids(resumed.next_minibatch(2, num_data_partitions=2, partition_index=0)) for _ in range(3)]
    assert got == expected == [[4], [6], [8]]


def test_keys_that_are_no_utf8_come_through_as_surrogate_escapes(tmp_path):
    # a CTF sequence id may hold any byte but a blank; Python keys must not fail on it
    path = tmp_path / "k.ctf"
    path.write_bytes(b"utt\xe9 |f 1 2\nutt2 |f 3 4\n")
    config = tmp_path / "k.cntk"
    config.write_text('T = [ reader = [ randomize = false ; useNumericSequenceKeys = false\n'
                      ' deserializers = ( [ type = "CNTKTextFormatDeserializer" ; file = "%s" ; maxErrors = 10\n'
                      ' input = [ f = [ dim = 2 ; format = "dense" ] ] ] ) ] ]\n' % path)
    source = cntkio.MinibatchSource.from_config(str(config), "T", max_sweeps=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a symbolic id costs CNTK a parse error per row (within maxErrors)
        mb = source.next_minibatch(10)
    keys = mb[source.streams.f].keys
    assert [os.fsencode(k) for k in keys] == [b"utt\xe9", b"utt2"]


def test_truncated_bptt_describes_every_stream_as_dense(tmp_path):
    # CNTK's composite reader says dense for every stream in truncated mode, as the data is delivered
    path = tmp_path / "d.ctf"
    path.write_text("".join("%d |f %d 0 |l %d:1\n" % (i, t, t % 5) for i, n in enumerate([3, 4, 2]) for t in range(n)))
    source = ctf_source(str(path), randomize=False, truncation_length=2)
    assert not source.streams.labels.is_sparse
    mb = source.next_minibatch(4)
    assert not mb[source.streams.labels].is_sparse


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_merged_checkpoint_of_truncated_bptt_continues_exactly_with_as_many_workers(tmp_path, workers):
    # the slots' partly emitted sequences are kept in the merged state: the same worker count continues as
    # from each worker's own state (another count continues from the positions, as documented)
    path = tmp_path / "b.ctf"
    path.write_text("".join("%d |x %d %d\n" % (s, s, t) for s in range(12) for t in range(5)))
    config = tmp_path / "b.cntk"
    config.write_text('R = [ reader = [ randomize = false ; truncated = true ; truncationLength = 2\n'
                      '  deserializers = ([ type = "CNTKTextFormatDeserializer" ; file = "%s"\n'
                      '    input = [ x = [ dim = 2 ; format = "dense" ] ] ]) ] ]\n' % path)

    def rows(mb):
        return [] if not mb else [tuple(v) for v in mb["x"].asarray().reshape(-1, 2).tolist() if any(v)]

    def read(source, rank, count=None):
        out = []
        while count is None or count > 0:
            mb = source.next_minibatch(4 * workers, num_data_partitions=workers, partition_index=rank)
            if not mb:
                break
            out += rows(mb)
            count = None if count is None else count - 1
        return out

    whole = [read(cntkio.MinibatchSource.from_config(str(config), "R", max_sweeps=1), r) for r in range(workers)]
    sources = [cntkio.MinibatchSource.from_config(str(config), "R", max_sweeps=1) for _ in range(workers)]
    first = [read(s, r, 2) for r, s in enumerate(sources)]
    merged = cntkio.merge_checkpoint_states([s.get_checkpoint_state() for s in sources])
    for r in range(workers):
        resumed = cntkio.MinibatchSource.from_config(str(config), "R", max_sweeps=1)
        resumed.restore_from_checkpoint(merged)
        assert first[r] + read(resumed, r) == whole[r], r
