"""The typed route: a MinibatchSource built from cntk.io objects is a ReaderSpec handed to the C++ module, never
config text. Each deserializer type read through the Python API equals the same reader written by hand as a
CNTK config and read with MinibatchSource.from_config (randomized, two workers, a checkpoint restore), and
file names that CNTK's config language cannot express are read."""

import pickle
import subprocess
import warnings

import numpy as np
import pytest

import cntkio
from cntkio import transforms as T
from conftest import sequence_ids, write_ctf
from test_htk import DIM, STATES, Corpus
from conftest import requires_images
from test_image import CLASSES, EIGEN_XML, Images

# '$' (CNTK's variable marker), ' #' (its comment marker) and a double quote: the config text cannot hold them.
AWKWARD = 'x $HOME$ #1 "q"'


def snapshot(mb):
    """Everything a minibatch holds, comparable with ==: per stream (in stream order) its name, the keys of its
    sequences, their values and the end-of-sweep flag."""
    out = []
    for info, data in mb.items():
        values = [v.toarray() if data.is_sparse else np.asarray(v) for v in data.as_sequences()]
        out.append((info.name, data.keys, [v.tolist() for v in values], data.end_of_sweep))
    return out


def read(source, count, rank, size=4):
    """Snapshots of the next ``count`` minibatches of partition ``rank`` of 2 (fewer at the end)."""
    out = []
    for _ in range(count):
        mb = source.next_minibatch(size, num_data_partitions=2, partition_index=rank)
        if not mb:
            break
        out.append(snapshot(mb))
    return out


def stream_layout(source):
    return [(i.name, i.storage_format, i.dtype, i.shape) for i in source.stream_infos()]


def assert_same_reader(make_python, config, tmp_path, size=4):
    """The source make_python() builds reads as the reader section ``config`` (CNTK config text): same streams;
    for each of 2 workers the same minibatches; and a checkpoint of either route restores the other. (A
    randomized reader deals whole chunks to the workers: a worker may get none of a small file.)"""
    path = tmp_path / "reader.cntk"
    path.write_text("r = [ reader = [\n%s\n] ]\n" % config)

    def make_config():
        return cntkio.MinibatchSource.from_config(str(path), "r")

    assert stream_layout(make_python()) == stream_layout(make_config())
    compared = 0
    for rank in (0, 1):
        by_spec, by_config = make_python(), make_config()
        head = read(by_spec, 3, rank, size)
        assert head == read(by_config, 3, rank, size)
        compared += len(head)
        spec_state, config_state = by_spec.get_checkpoint_state(), by_config.get_checkpoint_state()
        assert spec_state == config_state
        tail = read(by_config, 5, rank, size)
        assert tail == read(by_spec, 5, rank, size)
        resumed = make_python()
        resumed.restore_from_checkpoint(config_state)
        assert read(resumed, 5, rank, size) == tail
        resumed = make_config()
        resumed.restore_from_checkpoint(spec_state)
        assert read(resumed, 5, rank, size) == tail
        compared += len(tail)
    assert compared >= 8


def test_ctf_reads_as_its_config(tmp_path):
    data = write_ctf(tmp_path / "d.ctf", [1 + i % 4 for i in range(40)])

    def make():
        # Not in CNTK's (case-insensitive alphabetical) order: the reader's stream order is that order.
        streams = cntkio.StreamDefs(labels=cntkio.StreamDef(field="l", shape=5, is_sparse=True),
                                    Features=cntkio.StreamDef(field="f", shape=2, defines_mb_size=True))
        return cntkio.MinibatchSource(cntkio.CTFDeserializer(data, streams), randomization_window_in_samples=30,
                                      randomization_seed=3, max_errors=10, trace_level=cntkio.TraceLevel.Error)

    config = ('randomize = true ; randomizationWindow = 30 ; sampleBasedRandomizationWindow = true\n'
              'randomizationSeed = 3 ; maxErrors = 10 ; traceLevel = 0\n'
              'deserializers = ( [ type = "CNTKTextFormatDeserializer" ; module = "CNTKTextFormatReader"\n'
              '  file = "%s"\n'
              '  input = [ labels = [ alias = "l" ; dim = 5 ; format = "sparse" ]\n'
              '            Features = [ alias = "f" ; dim = 2 ; format = "dense" ; definesMBSize = true ] ] ] )' % data)
    assert [i.name for i in make().stream_infos()] == ["Features", "labels"]
    first_sweep = [sequence_ids(mb, "Features") for mb in make().epoch_minibatches(200)]
    assert first_sweep[0] != sorted(first_sweep[0])  # randomized
    assert_same_reader(make, config, tmp_path)

    # The reader's maxErrors counts invalid sequences; a malformed row is the CTF deserializer's own error (its
    # section's maxErrors, which cntk.io leaves at 0): both routes fail on it alike.
    with open(data, "a") as out:
        out.write("40 |f 1 oops |l 0:1\n")
    by_spec = pytest.raises(cntkio.FormatError, lambda: read(make(), 30, 0))
    by_config = pytest.raises(cntkio.FormatError, lambda: read(cntkio.MinibatchSource.from_config(
        str(tmp_path / "reader.cntk"), "r"), 30, 0))
    assert by_spec.value.cntk_text == by_config.value.cntk_text and by_spec.value.line == by_config.value.line == 101


def test_cbf_reads_as_its_config(tmp_path, cli):
    text = write_ctf(tmp_path / "d.ctf", [1 + i % 3 for i in range(30)])
    data = tmp_path / "d.bin"
    subprocess.run([cli, "convert", text, str(data), "--stream", "f:f:2:dense", "--stream", "l:l:5:sparse",
                    "--chunk-size", "200"], check=True, capture_output=True)  # chunks for both workers

    def make():
        return cntkio.MinibatchSource(cntkio.CBFDeserializer(str(data), cntkio.StreamDefs(
            features=cntkio.StreamDef(field="f"))), randomization_window_in_samples=20, randomization_seed=1)

    config = ('randomize = true ; randomizationWindow = 20 ; sampleBasedRandomizationWindow = true\n'
              'randomizationSeed = 1\n'
              'deserializers = ( [ type = "CNTKBinaryFormatDeserializer" ; module = "CNTKBinaryReader"\n'
              '  file = "%s" ; input = [ features = [ alias = "f" ] ] ] )' % data)
    assert [i.name for i in make().stream_infos()] == ["features", "l"]
    assert_same_reader(make, config, tmp_path)


@pytest.mark.parametrize("frame_mode", [True, False])
def test_htk_features_and_labels_read_as_their_config(tmp_path, frame_mode):
    corpus = Corpus(tmp_path)
    randomize = frame_mode  # the corpus is one chunk: in sequence mode both workers read it, in file order

    def make():
        return cntkio.MinibatchSource([
            cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(features=cntkio.StreamDef(
                scp=str(corpus.scp), shape=DIM, context=(1, 2)))),
            cntkio.HTKMLFDeserializer(str(corpus.states), cntkio.StreamDefs(labels=cntkio.StreamDef(
                mlf=str(corpus.mlf), shape=STATES)))], frame_mode=frame_mode, randomization_seed=2,
            randomize=randomize)

    order = ('randomize = true ; randomizationWindow = 128 ; sampleBasedRandomizationWindow = false\n'
             'randomizationSeed = 2\n' if randomize else 'randomize = false\n')
    config = order + (
        'frameMode = %s\n'
        'deserializers = (\n'
        '  [ type = "HTKFeatureDeserializer" ; module = "HTKDeserializers"\n'
        '    input = [ features = [ scpFile = "%s" ; dim = %d ; contextWindow = 1:2 ] ] ]\n'
        '  : [ type = "HTKMLFDeserializer" ; module = "HTKDeserializers"\n'
        '    input = [ labels = [ mlfFile = "%s" ; labelMappingFile = "%s" ; labelDim = %d ] ] ] )'
        % (str(frame_mode).lower(), corpus.scp, DIM, corpus.mlf, corpus.states, STATES))
    assert_same_reader(make, config, tmp_path, size=16)


@requires_images
@pytest.mark.parametrize("base64_map", [False, True])
def test_images_with_random_transforms_read_as_their_config(tmp_path, base64_map):
    images = Images(tmp_path, count=12)
    kind = "Base64ImageDeserializer" if base64_map else "ImageDeserializer"
    path = images.base64_map if base64_map else images.map
    # Each image is a chunk of its own; the base64 map is one chunk, which a randomized reader gives to one
    # worker only: it reads in file order, sequence by sequence.
    randomize = not base64_map

    eigen = tmp_path / "eigen.xml"
    eigen.write_text(EIGEN_XML)

    def make():
        transforms = [T.crop(crop_type="randomside", side_ratio=(0.5, 0.9), jitter_type="uniratio"),
                      T.scale(width=4, height=3, channels=3, interpolations="cubic"), T.color(0.2, 0.3, 0.1),
                      # Written by hand with CNTK's keys, in other spellings: keys ignore case, as in a config.
                      {"type": "Intensity", "IntensityStdDev": 0.1, "intensityfile": eigen, "seed": 7},
                      {"type": "Crop", "cropType": "RandomArea", "areaRatio": "0.6:1", "hflip": False, "seed": 2}]
        return cntkio.MinibatchSource(getattr(cntkio, kind)(str(path), cntkio.StreamDefs(
            features=cntkio.StreamDef(field="image", transforms=transforms),
            labels=cntkio.StreamDef(field="label", shape=CLASSES))), randomization_seed=5, randomize=randomize)

    order = ('randomize = true ; randomizationWindow = 128 ; sampleBasedRandomizationWindow = false\n'
             'randomizationSeed = 5\n' if randomize else 'randomize = false\n')
    config = order + (
        'deserializers = ( [ type = "%s" ; module = "ImageReader" ; file = "%s"\n'
        '  input = [ features = [ transforms = (\n'
        '    [ type = "Crop" ; cropType = "randomside" ; sideRatio = 0.5:0.9 ; jitterType = "uniratio" ]\n'
        '    : [ type = "Scale" ; width = 4 ; height = 3 ; channels = 3 ; interpolations = "cubic" ]\n'
        '    : [ type = "Color" ; brightnessRadius = 0.2 ; contrastRadius = 0.3 ; saturationRadius = 0.1 ]\n'
        '    : [ type = "Intensity" ; intensityStdDev = 0.1 ; intensityFile = "%s" ; seed = 7 ]\n'
        '    : [ type = "Crop" ; cropType = "randomarea" ; areaRatio = 0.6:1 ; hflip = false ; seed = 2 ]\n'
        '    : [ type = "Transpose" ] ) ]\n'
        '    labels = [ labelDim = %d ] ] ] )' % (kind, path, eigen, CLASSES))
    assert_same_reader(make, config, tmp_path, size=2)


def test_deserializer_definitions_pickle_as_the_calls_that_made_them(tmp_path):
    """A spawned DataLoader worker receives MinibatchDataset's MinibatchSource arguments pickled."""
    data = write_ctf(tmp_path / "d.ctf", [2, 1, 3])
    streams = cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=(1, 2)))
    definitions = [cntkio.CTFDeserializer(data, streams),
                   cntkio.ImageDeserializer("m.txt", cntkio.StreamDefs(i=cntkio.StreamDef(
                       field="image", transforms=[T.scale(2, 2, 3)])), max_image_pixels=9),
                   cntkio.HTKMLFDeserializer(None, cntkio.StreamDefs(l=cntkio.StreamDef(mlf=["a", "b"], shape=3)))]
    for d in definitions:
        copy = pickle.loads(pickle.dumps(d))
        assert type(copy) is type(d) and copy.sample_shapes == d.sample_shapes
        assert copy.config_text().split("_ignore_labels_")[0] == d.config_text().split("_ignore_labels_")[0]
    copy = pickle.loads(pickle.dumps(definitions[0]))
    source = cntkio.MinibatchSource(copy, randomize=False, max_sweeps=1)
    assert source.next_minibatch(100)["features"].asarray().shape == (3, 3, 1, 2)


# --------------------------------------------------------------------------------------------------------
# Names the config language cannot express


def test_ctf_and_cbf_files_whose_names_the_config_language_cannot_express_are_read(tmp_path, cli):
    directory = tmp_path / AWKWARD
    directory.mkdir()
    ctf = write_ctf(directory / "line\nbreak.ctf", [2, 1, 3])
    cbf = directory / "data #2.bin"
    subprocess.run([cli, "convert", ctf, str(cbf), "--stream", "f:f:2:dense", "--stream", "l:l:5:sparse"],
                   check=True, capture_output=True)
    streams = cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2))
    for deserializer in (cntkio.CTFDeserializer(ctf, streams), cntkio.CBFDeserializer(str(cbf), streams)):
        source = cntkio.MinibatchSource(deserializer, randomize=False, max_sweeps=1)
        assert sequence_ids(source.next_minibatch(100)) == [0, 1, 2]
        with pytest.raises(ValueError, match="cannot express"):
            deserializer.config_text()
        with pytest.raises(ValueError, match="cannot express"):
            source.config_text


def test_a_ctf_field_with_dollar_and_hash_is_read(tmp_path):
    data = tmp_path / "d.ctf"
    data.write_text("0 |a$b# 1 2\n1 |a$b# 3 4\n")
    source = cntkio.MinibatchSource(cntkio.CTFDeserializer(str(data), cntkio.StreamDefs(
        x=cntkio.StreamDef(field="a$b#", shape=2))), randomize=False, max_sweeps=1)
    assert source.next_minibatch(10)["x"].asarray().reshape(-1, 2).tolist() == [[1, 2], [3, 4]]


def test_htk_files_whose_names_the_config_language_cannot_express_are_read(tmp_path):
    root = tmp_path / AWKWARD
    root.mkdir()
    corpus = Corpus(root)
    source = cntkio.MinibatchSource([corpus.features(), corpus.labels()], randomize=False, max_sweeps=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mb = source.next_minibatch(10000)
    assert mb["features"].keys == corpus.keys
    for key, features, labels in zip(corpus.keys, mb["features"].as_sequences(), mb["labels"].as_sequences()):
        assert np.array_equal(features, corpus.frames[key])
        assert np.array_equal(labels.toarray(), corpus.one_hot(key))
    with pytest.raises(ValueError, match="cannot express"):
        source.config_text


@requires_images
@pytest.mark.parametrize("base64_map", [False, True])
def test_image_files_whose_names_the_config_language_cannot_express_are_read(tmp_path, base64_map):
    root = tmp_path / AWKWARD
    root.mkdir()
    images = Images(root)
    mean = root / "mean #1.xml"
    mean.write_text('<?xml version="1.0"?>\n<opencv_storage>\n<Channel>3</Channel><Row>5</Row><Col>7</Col>\n'
                    '<MeanImg type_id="opencv-matrix"><rows>1</rows><cols>105</cols><dt>f</dt>\n'
                    '<data>%s</data></MeanImg>\n</opencv_storage>\n' % " ".join(["1"] * 105))
    source = images.source([T.mean(str(mean))], base64_map=base64_map)
    mb = source.next_minibatch(100)
    got = mb["features"].as_sequences()
    assert len(got) == len(images.pixels)
    for i, sample in enumerate(got):
        assert np.array_equal(sample[0], images.chw(i) - 1)
    with pytest.raises(ValueError, match="cannot express"):
        source.config_text
