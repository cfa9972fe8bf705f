"""cntkio.HTKFeatureDeserializer and cntkio.HTKMLFDeserializer (cntk.io's speech readers): every StreamDef
argument and option against a corpus generated here with a fixed seed (HTK feature files in both byte orders,
plain and compressed, an archive with several utterances, an MLF in 100 ns units and a state list), and the
arrays against `cntkio dump` of the same configuration."""

import os
import struct

import numpy as np
import pytest

import cntkio
from readerdump import assert_equals_cli_dump

DIM = 13
STATES = 24


def write_htk(path, frames, big_endian=True, compressed=False, kind=9, period=100000):
    """Writes an HTK feature file (USER kind by default) and returns the frames a reader must deliver (the
    decoded values for a compressed file)."""
    frames = np.asarray(frames, np.float32)
    n, dim = frames.shape
    e = ">" if big_endian else "<"
    with open(path, "wb") as out:
        if not compressed:
            out.write(struct.pack(e + "iihh", n, period, 4 * dim, kind))
            out.write(frames.astype(e + "f4").tobytes())
            return frames
        lo, hi = frames.min(0), frames.max(0)
        span = np.where(hi > lo, hi - lo, np.float32(1)).astype(np.float32)
        a = (np.float32(2 * 32767) / span).astype(np.float32)
        b = ((hi + lo) * a / np.float32(2)).astype(np.float32)
        v = np.clip(np.round(frames * a - b), -32767, 32767).astype(np.int16)
        out.write(struct.pack(e + "iihh", n + 4, period, 2 * dim, kind | 0o2000))
        out.write(a.astype(e + "f4").tobytes())
        out.write(b.astype(e + "f4").tobytes())
        out.write(v.astype(e + "i2").tobytes())
        return ((v.astype(np.float32) + b) / a).astype(np.float32)


class Corpus:
    """Utterances utt00.. of 3..14 frames of DIM values: value 0 is the utterance number, value 1 the frame
    index, the rest random. Utterances 0-3 live in one little-endian archive (with filler frames between them),
    4-5 are compressed (big- and little-endian), the rest are single big-endian files. Labels: consecutive
    segments of random states, times in 100 ns units."""

    def __init__(self, root, count=12, seed=7):
        rng = np.random.default_rng(seed)
        self.root = root
        (root / "feat").mkdir()
        self.keys = ["utt%02d" % i for i in range(count)]
        self.frames = {}
        self.classes = {}
        self.phone_start = {}
        lengths = rng.integers(3, 15, size=count)
        raw = {}
        for i, key in enumerate(self.keys):
            f = np.round(rng.uniform(-5, 5, size=(lengths[i], DIM)), 3).astype(np.float32)
            f[:, 0] = i
            f[:, 1] = np.arange(lengths[i])
            raw[key] = f
        scp = []
        archive, offset, filler = [], 0, np.full((2, DIM), -99, np.float32)
        for key in self.keys[:4]:
            archive += [filler, raw[key]]
            start = offset + len(filler)
            offset = start + len(raw[key])
            scp.append("%s.mfc=%s[%d,%d]" % (key, root / "feat" / "archive.le", start, offset - 1))
        written = write_htk(root / "feat" / "archive.le", np.concatenate(archive), big_endian=False)
        pos = 0
        for key in self.keys[:4]:
            pos += len(filler)
            self.frames[key] = written[pos:pos + len(raw[key])]
            pos += len(raw[key])
        for j, key in enumerate(self.keys[4:], start=4):
            path = root / "feat" / ("%s.htk" % key)
            self.frames[key] = write_htk(path, raw[key], big_endian=(j != 5), compressed=j in (4, 5))
            scp.append("%s.mfc=%s[0,%d]" % (key, path, len(raw[key]) - 1))
        self.scp = root / "feats.scp"
        self.scp.write_text("\n".join(scp) + "\n")

        self.state_names = ["st%02d_%s" % (k, "abcdefghij"[k % 10]) for k in range(STATES)]
        self.states = root / "states.list"
        self.states.write_text("\n".join(self.state_names) + "\n")
        mlf = ["#!MLF!#"]
        for key in self.keys:
            n = len(self.frames[key])
            cuts = sorted(set(rng.integers(1, n, size=2).tolist()))
            bounds = [0] + cuts + [n]
            classes = np.zeros(n, np.int64)
            starts = np.zeros(n, bool)
            mlf.append('"*/%s.lab"' % key)
            for s, t in zip(bounds[:-1], bounds[1:]):
                c = int(rng.integers(0, STATES))
                classes[s:t] = c
                starts[s] = True
                mlf.append("%d %d %s" % (s * 100000, t * 100000, self.state_names[c]))
            mlf.append(".")
            self.classes[key] = classes
            self.phone_start[key] = starts
        self.mlf = root / "labels.mlf"
        self.mlf.write_text("\n".join(mlf) + "\n")

    def features(self, **kwargs):
        return cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(
            features=cntkio.StreamDef(scp=str(self.scp), shape=kwargs.pop("shape", DIM), **kwargs)))

    def labels(self, phone_boundaries=False, **kwargs):
        return cntkio.HTKMLFDeserializer(str(self.states), cntkio.StreamDefs(
            labels=cntkio.StreamDef(mlf=kwargs.pop("mlf", str(self.mlf)), shape=STATES)),
            phoneBoundaries=phone_boundaries)

    def source(self, features=None, labels=None, **kwargs):
        kwargs.setdefault("randomize", False)
        kwargs.setdefault("max_sweeps", 1)
        return cntkio.MinibatchSource([features or self.features(), labels or self.labels()], **kwargs)

    def one_hot(self, key):
        return np.eye(STATES, dtype=np.float32)[self.classes[key]]


def context_frames(frames, left, right):
    """Each frame with its neighbours t-left..t+right (edge frames repeated), concatenated."""
    n = len(frames)
    return np.concatenate([frames[np.clip(np.arange(n) + d, 0, n - 1)] for d in range(-left, right + 1)], axis=1)


def read_sweep(source, minibatch_size=10000, **kwargs):
    batches = []
    while True:
        mb = source.next_minibatch(minibatch_size, **kwargs)
        if not mb:
            return batches
        batches.append(mb)


@pytest.fixture
def corpus(tmp_path):
    return Corpus(tmp_path)


# --------------------------------------------------------------------------------------------------------
# Modes and arrays


def test_frame_mode_delivers_every_frame_with_its_label(corpus):
    source = corpus.source(frame_mode=True)
    assert [i.name for i in source.stream_infos()] == ["features", "labels"]
    assert source.streams.features.shape == (DIM,) and source.streams.labels.is_sparse
    batches = read_sweep(source, 17)
    features = np.concatenate([mb["features"].asarray()[:, 0] for mb in batches])
    labels = np.concatenate([mb["labels"].asarray().toarray() for mb in batches])
    assert np.array_equal(features, np.concatenate([corpus.frames[k] for k in corpus.keys]))
    assert np.array_equal(labels, np.concatenate([corpus.one_hot(k) for k in corpus.keys]))
    assert all(mb["features"].asarray().shape[1:] == (1, DIM) for mb in batches)
    assert batches[-1]["features"].end_of_sweep and not batches[0]["features"].end_of_sweep


def test_sequence_mode_gives_one_sequence_per_utterance_with_its_key(corpus):
    batches = read_sweep(corpus.source(), 40)
    keys = [k for mb in batches for k in mb["features"].keys]
    assert keys == corpus.keys
    features = [s for mb in batches for s in mb["features"].as_sequences()]
    labels = [s.toarray() for mb in batches for s in mb["labels"].as_sequences()]
    for key, f, y in zip(keys, features, labels):
        assert np.array_equal(f, corpus.frames[key]) and np.array_equal(y, corpus.one_hot(key))
    first = batches[0]["features"]
    assert first.asarray().shape == (first.num_sequences, max(len(s) for s in first.as_sequences()), DIM)


def test_randomization_seed_reorders_reproducibly(corpus):
    def order(seed):
        source = corpus.source(frame_mode=True, randomize=True, randomization_seed=seed)
        return [tuple(x[:2]) for mb in read_sweep(source, 25) for x in mb["features"].asarray().tolist()]

    plain = [tuple(x[:2]) for mb in read_sweep(corpus.source(frame_mode=True), 25)
             for x in mb["features"].asarray().tolist()]
    assert order(3) == order(3)
    assert order(3) != order(4)
    assert sorted(order(3)) == sorted(plain) and order(3) != plain


def test_truncation_length_cuts_utterances_into_windows(corpus):
    source = corpus.source(truncation_length=4)
    pieces = {}
    for mb in read_sweep(source, 8):
        data = mb["features"]
        assert data.asarray().shape[1] == 4
        for key, piece in zip(data.keys, data.as_sequences()):
            pieces.setdefault(key, []).append(piece)
    assert sorted(pieces) == sorted(corpus.keys)
    for key, parts in pieces.items():
        assert np.array_equal(np.concatenate(parts), corpus.frames[key])


# --------------------------------------------------------------------------------------------------------
# StreamDef arguments


@pytest.mark.parametrize("left,right", [(2, 2), (0, 3), (1, 0)])
def test_context_window_concatenates_neighbour_frames(corpus, left, right):
    source = corpus.source(features=corpus.features(context=(left, right)))
    assert source.streams.features.shape == (DIM * (1 + left + right),)
    batches = read_sweep(source)
    for mb in batches:
        for key, seq in zip(mb["features"].keys, mb["features"].as_sequences()):
            assert np.array_equal(seq, context_frames(corpus.frames[key], left, right))


def test_context_window_in_frame_mode_stays_inside_the_utterance(corpus):
    source = corpus.source(features=corpus.features(context=(2, 2)), frame_mode=True)
    got = np.concatenate([mb["features"].asarray()[:, 0] for mb in read_sweep(source, 9)])
    assert np.array_equal(got, np.concatenate([context_frames(corpus.frames[k], 2, 2) for k in corpus.keys]))


def test_window_inferred_from_the_shape_without_context(corpus):
    source = corpus.source(features=corpus.features(shape=5 * DIM))  # no context: (0, 0), a 5-frame window
    assert source.streams.features.shape == (5 * DIM,)
    mb = source.next_minibatch(10000)
    for key, seq in zip(mb["features"].keys, mb["features"].as_sequences()):
        assert np.array_equal(seq, context_frames(corpus.frames[key], 2, 2))


def test_shape_that_is_an_even_window_is_refused(corpus):
    with pytest.raises(ValueError, match="not symmetrical"):
        read_sweep(corpus.source(features=corpus.features(shape=2 * DIM)))


def test_bad_context_is_refused(corpus):
    with pytest.raises(ValueError, match="context must be a pair"):
        corpus.features(context=3)
    with pytest.raises(ValueError, match="left context"):
        corpus.features(context=(-1, 2))


def write_ivectors(corpus, dim=4, seed=11):
    """One frame per utterance (an i-vector) in an SCP of its own; returns (scp path, {key: frame})."""
    rng = np.random.default_rng(seed)
    vectors = {k: np.round(rng.uniform(-1, 1, size=(1, dim)), 3).astype(np.float32) for k in corpus.keys}
    frames = write_htk(corpus.root / "feat" / "ivectors.be", np.concatenate([vectors[k] for k in corpus.keys]))
    lines = ["%s.ivec=%s[%d,%d]" % (k, corpus.root / "feat" / "ivectors.be", i, i) for i, k in enumerate(corpus.keys)]
    scp = corpus.root / "ivectors.scp"
    scp.write_text("\n".join(lines) + "\n")
    return scp, {k: frames[i:i + 1] for i, k in enumerate(corpus.keys)}


@pytest.mark.parametrize("frame_mode", [False, True])
def test_broadcast_repeats_the_single_frame_over_the_utterance(corpus, frame_mode):
    scp, vectors = write_ivectors(corpus)
    # Two streams in one HTKFeatureDeserializer: cntk.io makes one deserializer each, the first primary.
    features = cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(
        features=cntkio.StreamDef(scp=str(corpus.scp), shape=DIM),
        ivector=cntkio.StreamDef(scp=str(scp), shape=4, broadcast=True)))
    assert features.config_text().count("type = HTKFeatureDeserializer") == 2
    source = corpus.source(features=features, frame_mode=frame_mode)
    assert [i.name for i in source.stream_infos()] == ["features", "ivector", "labels"]
    batches = read_sweep(source, 16)
    if frame_mode:
        got = np.concatenate([mb["ivector"].asarray()[:, 0] for mb in batches])
        expected = np.concatenate([np.repeat(vectors[k], len(corpus.frames[k]), 0) for k in corpus.keys])
        assert np.array_equal(got, expected)
    else:
        for mb in batches:
            for key, seq in zip(mb["ivector"].keys, mb["ivector"].as_sequences()):
                assert np.array_equal(seq, np.repeat(vectors[key], len(corpus.frames[key]), 0))


def test_without_broadcast_a_one_frame_stream_keeps_one_frame(corpus):
    scp, vectors = write_ivectors(corpus)
    features = cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(
        features=cntkio.StreamDef(scp=str(corpus.scp), shape=DIM), ivector=cntkio.StreamDef(scp=str(scp), shape=4)))
    for mb in read_sweep(corpus.source(features=features)):
        for key, seq in zip(mb["ivector"].keys, mb["ivector"].as_sequences()):
            assert np.array_equal(seq, vectors[key])


def test_broadcast_stream_cannot_be_primary(corpus):
    scp, _ = write_ivectors(corpus)
    features = cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(ivector=cntkio.StreamDef(scp=str(scp), shape=4,
                                                                                         broadcast=True)))
    with pytest.raises(ValueError, match="(?i)primary"):
        read_sweep(corpus.source(features=features))


def test_defines_mb_size_counts_only_that_streams_frames(corpus, tmp_path):
    """Sequence mode: a minibatch's budget counts the longest stream of a sequence unless a stream defines the
    size. A second feature stream twice as long as the first: with defines_mb_size on the short one,
    minibatches hold twice as many utterances."""
    frames = np.ones((8, 2), np.float32)
    short_lines, long_lines = [], []
    for i in range(6):
        write_htk(tmp_path / ("s%d.htk" % i), frames[:4])
        write_htk(tmp_path / ("l%d.htk" % i), frames)
        short_lines.append("u%d.x=%s[0,3]" % (i, tmp_path / ("s%d.htk" % i)))
        long_lines.append("u%d.x=%s[0,7]" % (i, tmp_path / ("l%d.htk" % i)))
    (tmp_path / "short.scp").write_text("\n".join(short_lines) + "\n")
    (tmp_path / "long.scp").write_text("\n".join(long_lines) + "\n")

    def sequences_per_minibatch(defines):
        d = cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(
            short=cntkio.StreamDef(scp=str(tmp_path / "short.scp"), shape=2, defines_mb_size=defines),
            long=cntkio.StreamDef(scp=str(tmp_path / "long.scp"), shape=2)))
        source = cntkio.MinibatchSource(d, randomize=False, max_sweeps=1)
        return [mb["short"].num_sequences for mb in read_sweep(source, 8)]

    assert sequences_per_minibatch(False) == [1] * 6
    assert sequences_per_minibatch(True) == [2] * 3


def test_scp_as_a_one_element_list(corpus):
    d = cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(features=cntkio.StreamDef(scp=[str(corpus.scp)], shape=DIM)))
    assert d.config_text() == corpus.features().config_text()


def test_several_scp_files_of_one_stream_read_as_one_list(corpus, tmp_path):
    lines = corpus.scp.read_text().splitlines()
    parts = [tmp_path / "part1.scp", tmp_path / "more" / "part2.scp", tmp_path / "part3.scp"]
    parts[1].parent.mkdir()
    for part, chunk in zip(parts, (lines[:3], lines[3:5], lines[5:])):
        part.write_text("\n".join(chunk) + "\n")
    several = cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(
        features=cntkio.StreamDef(scp=[str(p) for p in parts], shape=DIM)))
    for settings in (dict(), dict(randomize=True, randomization_seed=3), dict(frame_mode=True)):
        expected = read_sweep(corpus.source(**settings), 13)
        got = read_sweep(corpus.source(features=several, **settings), 13)
        assert [mb["features"].keys for mb in got] == [mb["features"].keys for mb in expected]
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a["features"].asarray(), b["features"].asarray())
            assert (a["labels"].asarray() != b["labels"].asarray()).nnz == 0
    with pytest.raises(ValueError, match="one scpFile per stream"):
        several.config_text()


def test_a_bad_line_in_a_later_scp_file_names_that_file(corpus, tmp_path):
    bad = tmp_path / "bad.scp"
    bad.write_text("broken line without an equals sign [\n")
    with pytest.raises(cntkio.FormatError) as caught:
        corpus.source(features=cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(
            features=cntkio.StreamDef(scp=[str(corpus.scp), str(bad)], shape=DIM))))
    assert caught.value.file == str(bad) and caught.value.line == 1


def test_cntk_io_argument_checks(corpus):
    with pytest.raises(ValueError, match="does not support stream names"):
        cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(f=cntkio.StreamDef(field="x", scp=str(corpus.scp), shape=1)))
    with pytest.raises(ValueError, match="No scp files"):
        cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(f=cntkio.StreamDef(shape=DIM)))
    with pytest.raises(ValueError, match="no feature streams"):
        cntkio.HTKFeatureDeserializer(cntkio.StreamDefs())
    with pytest.raises(ValueError, match="single stream"):
        cntkio.HTKMLFDeserializer(str(corpus.states), cntkio.StreamDefs(
            a=cntkio.StreamDef(mlf=str(corpus.mlf), shape=STATES), b=cntkio.StreamDef(mlf=str(corpus.mlf), shape=2)))
    with pytest.raises(ValueError, match="No master label files"):
        cntkio.HTKMLFDeserializer(str(corpus.states), cntkio.StreamDefs(l=cntkio.StreamDef(shape=STATES)))
    with pytest.raises(ValueError, match="does not support stream names"):
        cntkio.HTKMLFDeserializer(str(corpus.states), cntkio.StreamDefs(
            l=cntkio.StreamDef(field="l", mlf=str(corpus.mlf), shape=STATES)))
    assert cntkio.StreamDef(mlf="x.mlf", shape=3).is_sparse


# --------------------------------------------------------------------------------------------------------
# MLF options


def test_phone_boundaries_mark_segment_starts_with_two(corpus):
    source = corpus.source(labels=corpus.labels(phone_boundaries=True))
    for mb in read_sweep(source):
        for key, seq in zip(mb["labels"].keys, mb["labels"].as_sequences()):
            expected = corpus.one_hot(key) * np.where(corpus.phone_start[key], 2, 1)[:, None]
            assert np.array_equal(seq.toarray(), expected)


def test_phone_boundaries_and_frame_mode_are_exclusive(corpus):
    with pytest.raises(ValueError, match="frameMode and phoneBoundaries are mutually exclusive"):
        read_sweep(corpus.source(labels=corpus.labels(phone_boundaries=True), frame_mode=True))


def test_mlf_list_of_files(corpus):
    lines = corpus.mlf.read_text().splitlines()
    cut = lines.index(".", len(lines) // 2) + 1
    (corpus.root / "a.mlf").write_text("\n".join(lines[:cut]) + "\n")
    (corpus.root / "b.mlf").write_text("\n".join(["#!MLF!#"] + lines[cut:]) + "\n")
    labels = corpus.labels(mlf=[str(corpus.root / "a.mlf"), str(corpus.root / "b.mlf")])
    assert "mlfFileList" in labels.config_text()
    got = np.concatenate([mb["labels"].asarray().toarray() for mb in read_sweep(corpus.source(labels=labels,
                                                                                              frame_mode=True))])
    assert np.array_equal(got, np.concatenate([corpus.one_hot(k) for k in corpus.keys]))


def test_without_label_mapping_file_the_fourth_column_is_the_class(corpus):
    lines = []
    for line in corpus.mlf.read_text().splitlines():
        parts = line.split(" ")
        if len(parts) == 3:
            line = "%s %s x %d" % (parts[0], parts[1], corpus.state_names.index(parts[2]))
        lines.append(line)
    (corpus.root / "numeric.mlf").write_text("\n".join(lines) + "\n")
    labels = cntkio.HTKMLFDeserializer(None, cntkio.StreamDefs(
        labels=cntkio.StreamDef(mlf=str(corpus.root / "numeric.mlf"), shape=STATES)))
    got = np.concatenate([mb["labels"].asarray().toarray() for mb in read_sweep(corpus.source(labels=labels,
                                                                                              frame_mode=True))])
    assert np.array_equal(got, np.concatenate([corpus.one_hot(k) for k in corpus.keys]))


def test_label_shape_smaller_than_a_class_is_a_located_error(corpus):
    labels = cntkio.HTKMLFDeserializer(str(corpus.states), cntkio.StreamDefs(
        labels=cntkio.StreamDef(mlf=str(corpus.mlf), shape=2)))
    with pytest.raises(cntkio.FormatError, match="exceeds the model output dimension") as e:
        read_sweep(corpus.source(labels=labels))
    assert "labels.mlf" in str(e.value)


# --------------------------------------------------------------------------------------------------------
# Missing files


def test_missing_scp_file_names_it(corpus):
    features = cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(
        features=cntkio.StreamDef(scp=str(corpus.root / "nowhere.scp"), shape=DIM)))
    with pytest.raises((OSError, cntkio.FormatError), match="nowhere.scp"):
        read_sweep(corpus.source(features=features))


def test_missing_mlf_and_state_list_name_them(corpus):
    with pytest.raises((OSError, cntkio.FormatError), match="nowhere.mlf"):
        read_sweep(corpus.source(labels=corpus.labels(mlf=str(corpus.root / "nowhere.mlf"))))
    labels = cntkio.HTKMLFDeserializer(str(corpus.root / "nowhere.list"), cntkio.StreamDefs(
        labels=cntkio.StreamDef(mlf=str(corpus.mlf), shape=STATES)))
    with pytest.raises((OSError, cntkio.FormatError), match="nowhere.list"):
        read_sweep(corpus.source(labels=labels))


def test_missing_feature_file_names_it(corpus):
    (corpus.root / "feat" / "utt07.htk").unlink()
    with pytest.raises((OSError, cntkio.FormatError), match="utt07.htk"):
        read_sweep(corpus.source())


# --------------------------------------------------------------------------------------------------------
# Hostile inputs: not regular files, tiny files that claim billions of frames, MLFs without utterances


@pytest.mark.parametrize("which", ["scp", "feature", "mlf", "states"])
def test_a_fifo_is_refused_without_waiting_for_a_writer(corpus, which):
    pipe = corpus.root / ("pipe." + which)
    os.mkfifo(pipe)
    features, labels = None, None
    if which == "scp":
        features = cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(
            features=cntkio.StreamDef(scp=str(pipe), shape=DIM)))
    elif which == "feature":
        (corpus.root / "pipe.scp").write_text("utt00.mfc=%s[0,0]\n" % pipe)
        features = cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(
            features=cntkio.StreamDef(scp=str(corpus.root / "pipe.scp"), shape=DIM)))
    elif which == "mlf":
        labels = corpus.labels(mlf=str(pipe))
    else:
        labels = cntkio.HTKMLFDeserializer(str(pipe), cntkio.StreamDefs(
            labels=cntkio.StreamDef(mlf=str(corpus.mlf), shape=STATES)))
    with pytest.raises(OSError, match="FIFO") as e:
        read_sweep(corpus.source(features=features, labels=labels))
    assert str(pipe) in str(e.value)


def test_an_mlf_line_claiming_a_billion_frames_is_a_located_error(corpus):
    mlf = corpus.root / "huge.mlf"
    mlf.write_text('#!MLF!#\n"utt00.lab"\n0 100000000000000 %s\n.\n' % corpus.state_names[0])
    with pytest.raises(cntkio.FormatError, match="ends at frame 1000000000") as e:
        read_sweep(corpus.source(labels=corpus.labels(mlf=str(mlf)), frame_mode=True))
    assert (e.value.file, e.value.line, e.value.byte_offset, e.value.sequence_key) == (str(mlf), 3, 20, "utt00")


def test_an_scp_range_past_its_file_fails_before_reading(corpus):
    scp = corpus.root / "long.scp"
    scp.write_text("utt07.mfc=%s[0,3999999999]\n" % (corpus.root / "feat" / "utt07.htk"))
    features = cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(features=cntkio.StreamDef(scp=str(scp), shape=DIM)))
    with pytest.raises(cntkio.FormatError, match="end frame exceeds archive's total number of frames") as e:
        read_sweep(corpus.source(features=features, frame_mode=True))
    assert (e.value.file, e.value.line, e.value.sequence_key) == (str(scp), 1, "utt07")


def test_an_mlf_of_only_its_header_names_the_file(corpus):
    mlf = corpus.root / "header.mlf"
    mlf.write_text("#!MLF!#\n")
    with pytest.raises(cntkio.FormatError, match="No utterances to process") as e:
        read_sweep(corpus.source(labels=corpus.labels(mlf=str(mlf))))
    assert (e.value.file, e.value.byte_offset, e.value.stream) == (str(mlf), 8, "labels")


# --------------------------------------------------------------------------------------------------------
# Python arrays equal the C++ dump of the same configuration


@pytest.mark.parametrize("options", [
    dict(frame_mode=True),
    dict(frame_mode=True, randomize=True, randomization_seed=5),
    dict(),
    dict(randomize=True, randomization_window_in_samples=30, randomization_seed=2),
    dict(truncation_length=5),
], ids=["frame", "frame-random", "sequence", "sequence-random", "bptt"])
def test_arrays_equal_cpp_dump(cli, corpus, tmp_path, options):
    def make():
        return corpus.source(features=corpus.features(context=(1, 2)), **options)

    assert_equals_cli_dump(cli, make, ["features", "labels"], 16, tmp_path, epochs=2)


def test_phone_boundaries_and_broadcast_equal_cpp_dump(cli, corpus, tmp_path):
    scp, _ = write_ivectors(corpus)

    def make():
        features = cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(
            features=cntkio.StreamDef(scp=str(corpus.scp), shape=3 * DIM),
            ivector=cntkio.StreamDef(scp=str(scp), shape=4, broadcast=True, context=(1, 1))))
        return corpus.source(features=features, labels=corpus.labels(phone_boundaries=True))

    assert_equals_cli_dump(cli, make, ["features", "ivector", "labels"], 20, tmp_path)


@pytest.mark.parametrize("case_name,context,mlf,states,label_dim,phone_boundaries,options", [
    ("HTKGen_ctx5_frame", (2, 2), "labels.mlf", "states.list", 24, False, dict(frame_mode=True)),
    ("HTKGen_ctx_asym", (2, 1), "labels.mlf", "states.list", 24, False, dict(frame_mode=True)),
    ("HTKGen_frame_rand", None, "labels.mlf", "states.list", 24, False, dict(frame_mode=True, randomize=True)),
    ("HTKGen_seq_norand", None, "labels.mlf", "states.list", 24, False, dict()),
    ("HTKGen_phone_boundaries", None, "phones.mlf", "phones.list", 8, True, dict()),
    ("HTKGen_bptt5", None, "labels.mlf", "states.list", 24, False, dict(truncation_length=5)),
])
def test_generated_cntk_case_read_through_python_objects(cli, monkeypatch, case_name, context, mlf, states,
                                                         label_dim, phone_boundaries, options):
    """The generated HTK conformance cases (whose controls came from CNTK's own reader code), written with
    cntk.io's objects, read what `cntkio dump` prints for their CNTK configs."""
    from conftest import conformance_dir
    from readerdump import python_dump
    from test_conformance_arrays import cli_dump, load_case

    case = load_case(case_name)
    monkeypatch.chdir(conformance_dir() / case["cwd"])
    options.setdefault("randomize", False)
    source = cntkio.MinibatchSource([
        cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(
            features=cntkio.StreamDef(scp="feats.scp", shape=DIM, context=context))),
        cntkio.HTKMLFDeserializer(states, cntkio.StreamDefs(labels=cntkio.StreamDef(mlf=mlf, shape=label_dim)),
                                  phoneBoundaries=phone_boundaries)], **options)
    expected = cli_dump(cli, case)
    assert expected
    assert python_dump(source, ["features", "labels"], case["mbSize"], case["epochs"], case["epochSize"],
                       max_minibatches=10) == expected  # `cntkio dump` writes 10 per epoch by default


@pytest.mark.parametrize("frame_mode", [False, True])
def test_torch_items_of_joined_htk_streams_equal_the_packed_ones(corpus, monkeypatch, frame_mode):
    torch = pytest.importorskip("torch")
    import functools
    import cntkio.torch

    def source():  # features joined with MLF labels by key, context windows on the features
        return corpus.source(features=corpus.features(context=(1, 1)), randomize=True,
                             frame_mode=frame_mode)

    def items(defer):
        monkeypatch.setattr(cntkio.torch, "_DEFER_VALUES", defer)
        return list(cntkio.torch.MinibatchDataset(source, 23, sparse="dense"))

    got, want = items(True), items(False)
    assert len(got) == len(want) > 2
    for a, b in zip(got, want):
        assert sorted(a) == sorted(b)
        for key in b:
            assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize("context,shape", [((2 ** 40, 0), DIM), ((2 ** 63, 2 ** 63), DIM),
                                           ((0, 0), DIM * (2 ** 28 + 1))])
def test_windows_beyond_32_bit_samples_are_refused_before_anything_is_sized(corpus, context, shape):
    """A context window (or an inferred one, from the shape) whose samples would hold more than 2**31 - 1
    values: a ConfigError when the source is made, not an overflowed size or an allocation of that much."""
    with pytest.raises(cntkio.ConfigError, match="2147483647"):
        corpus.source(features=corpus.features(context=context, shape=shape))


def _mlf_order_reader(tmp_path, mlf_text, state_list):
    import warnings

    struct_bytes = struct.pack("<iiHh", 8, 100000, 4, 9) + struct.pack("<8f", *range(8))
    (tmp_path / "f.htk").write_bytes(struct_bytes)
    (tmp_path / "f.scp").write_text("u1.mfc=%s[0,4]\nu2.mfc=%s[5,6]\n" % (tmp_path / "f.htk", tmp_path / "f.htk"))
    (tmp_path / "l.mlf").write_text(mlf_text)
    mapping = ""
    if state_list:
        (tmp_path / "states.list").write_text("a\nb\n")
        mapping = 'labelMappingFile = "%s"' % (tmp_path / "states.list")
    (tmp_path / "r.cntk").write_text(
        'T = [ reader = [ randomize = false ; frameMode = true ; maxErrors = 100\n deserializers = (\n'
        ' [ type = "HTKFeatureDeserializer" ; input = [ features = [ dim = 1 ; scpFile = "%s" ] ] ]:\n'
        ' [ type = "HTKMLFDeserializer" ; input = [ labels = [ mlfFile = "%s"\n %s\n labelDim = 4 ] ] ] ) ] ]\n'
        % (tmp_path / "f.scp", tmp_path / "l.mlf", mapping))
    source = cntkio.MinibatchSource.from_config(str(tmp_path / "r.cntk"), "T", max_sweeps=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_sweep(source, 100)


def test_mlf_label_lines_are_parsed_before_the_first_frame_is_checked(tmp_path):
    # CNTK parses an utterance's lines in order (a malformed one throws) and checks frame 0 only after them:
    # an unknown state on the second line is the error, not the first line's start at frame 1
    with pytest.raises(cntkio.FormatError, match="'zz' is not found in the statelist"):
        _mlf_order_reader(tmp_path, '#!MLF!#\n"u1.lab"\n1 3 a\n3 5 zz\n.\n"u2.lab"\n0 2 a\n.\n', True)


def test_mlf_utterance_out_of_order_is_left_out_before_its_class_ids_are_checked(tmp_path):
    # a range that does not follow on makes the utterance invalid (a warning, within maxErrors); CNTK never
    # checks the class ids of an invalid utterance, so class 9 >= labelDim 4 on that line is no error
    batches = _mlf_order_reader(tmp_path, '#!MLF!#\n"u1.lab"\n0 3 x 1\n4 5 x 9\n.\n"u2.lab"\n0 2 x 1\n.\n', False)
    features = np.concatenate([mb["features"].asarray()[:, 0, 0] for mb in batches])
    assert features.tolist() == [5.0, 6.0]  # u2's frames only


def test_a_missing_feature_file_names_the_scp_line_that_names_it(tmp_path):
    struct_bytes = struct.pack("<iiHh", 3, 100000, 4, 9) + struct.pack("<3f", 1, 2, 3)
    (tmp_path / "m.htk").write_bytes(struct_bytes)
    scp = tmp_path / "f.scp"
    scp.write_text("u1.mfc=%s[0,2]\nu2.mfc=%s[0,1]\n" % (tmp_path / "m.htk", tmp_path / "nope.htk"))
    with pytest.raises(OSError, match=r"nope\.htk.*named at .*f\.scp', line 2"):
        source = cntkio.MinibatchSource(cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(
            features=cntkio.StreamDef(scp=str(scp), shape=1))), randomize=False, frame_mode=True, max_sweeps=1)
        read_sweep(source, 100)
