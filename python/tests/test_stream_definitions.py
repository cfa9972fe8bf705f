"""StreamConfiguration, StreamDef(max_sequence_length) and cntk.io arguments a deserializer does not use."""

import subprocess
import warnings

import numpy as np
import pytest

import cntkio
from cntkio import transforms as T
from conftest import write_ctf
from test_htk import DIM, Corpus


def read_all(source):
    mb = source.next_minibatch(1000)
    return {info.name: data for info, data in mb.items()}


def test_ctf_streams_as_a_list_of_stream_configurations(tmp_path):
    path = write_ctf(tmp_path / "d.ctf", [1, 2, 3])
    by_defs = read_all(cntkio.MinibatchSource(cntkio.CTFDeserializer(path, cntkio.StreamDefs(
        features=cntkio.StreamDef(field="f", shape=2), labels=cntkio.StreamDef(field="l", shape=5, is_sparse=True))),
        randomize=False, max_sweeps=1))
    by_list = read_all(cntkio.MinibatchSource(cntkio.CTFDeserializer(path, [
        cntkio.StreamConfiguration("features", 2, False, "f"), cntkio.StreamConfiguration("labels", 5, True, "l")]),
        randomize=False, max_sweeps=1))
    assert np.array_equal(by_list["features"].asarray(), by_defs["features"].asarray())
    assert (by_list["labels"].asarray() != by_defs["labels"].asarray()).nnz == 0


def test_a_stream_configuration_without_alias_reads_its_name_from_the_file(tmp_path):
    path = write_ctf(tmp_path / "d.ctf", [2])
    source = cntkio.MinibatchSource(cntkio.CTFDeserializer(path, [cntkio.StreamConfiguration("f", 2)]),
                                    randomize=False)
    assert source.next_minibatch(2)["f"].asarray().tolist() == [[[0, 0], [0, 1]]]
    c = cntkio.StreamConfiguration("x", 3, True, "a", True)
    assert (c.m_stream_name, c.m_dim, c.m_is_sparse, c.m_stream_alias, c.m_defines_mb_size) == ("x", 3, True, "a", True)
    with pytest.raises(TypeError):
        cntkio.CTFDeserializer(path, [cntkio.StreamDef(field="f", shape=2)])
    with pytest.raises(ValueError):
        cntkio.StreamConfiguration("x", 0)


@pytest.fixture
def cbf_file(tmp_path, cli):
    ctf = tmp_path / "d.ctf"
    ctf.write_text("0 |a 1 2 |b 3:1\n1 |a 3 4\n1 |a 5 6 |b 0:2\n")
    subprocess.run([cli, "convert", "--quiet", "--stream", "a:a:2:dense", "--stream", "b:b:4:sparse", str(ctf),
                    str(tmp_path / "d.cbf")], check=True)
    return str(tmp_path / "d.cbf")


def test_cbf_stream_configurations_rename_and_are_checked_against_the_file(cbf_file):
    source = cntkio.MinibatchSource(cntkio.CBFDeserializer(cbf_file, [
        cntkio.StreamConfiguration("x", 2, False, "a"), cntkio.StreamConfiguration("b", 4, True)]), randomize=False)
    assert sorted(source.streams) == ["b", "x"] and source.streams.x.shape == (2,)
    for streams, message in [([cntkio.StreamConfiguration("x", 3, False, "a")], "dimension 2 in the file, not 3"),
                             ([cntkio.StreamConfiguration("a", 2, True)], "dense in the file"),
                             (cntkio.StreamDefs(c=cntkio.StreamDef(shape=1)), "no stream 'c'")]:
        with pytest.raises(ValueError, match=message):
            cntkio.MinibatchSource(cntkio.CBFDeserializer(cbf_file, streams))


@pytest.mark.parametrize("make, argument", [
    (lambda: cntkio.CTFDeserializer("d.ctf", cntkio.StreamDefs(x=cntkio.StreamDef(
        field="x", shape=2, transforms=[T.scale(2, 2, 3)]))), "transforms"),
    (lambda: cntkio.CTFDeserializer("d.ctf", cntkio.StreamDefs(x=cntkio.StreamDef(
        field="x", shape=2, context=(1, 1)))), "context"),
    (lambda: cntkio.CTFDeserializer("d.ctf", cntkio.StreamDefs(x=cntkio.StreamDef(
        field="x", shape=2, broadcast=True))), "broadcast"),
    (lambda: cntkio.CTFDeserializer("d.ctf", cntkio.StreamDefs(x=cntkio.StreamDef(
        field="x", shape=2, max_sequence_length=10))), "max_sequence_length"),
    (lambda: cntkio.CBFDeserializer("d.cbf", cntkio.StreamDefs(x=cntkio.StreamDef(
        field="x", defines_mb_size=True))), "defines_mb_size"),
    (lambda: cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(x=cntkio.StreamDef(
        scp="a.scp", shape=3, is_sparse=True))), "is_sparse"),
    (lambda: cntkio.HTKMLFDeserializer("s.txt", cntkio.StreamDefs(x=cntkio.StreamDef(
        mlf="a.mlf", shape=3, context=(2, 2)))), "context"),
    (lambda: cntkio.ImageDeserializer("m.txt", cntkio.StreamDefs(x=cntkio.StreamDef(
        field="image", shape=(3, 4, 4)))), "shape"),
    (lambda: cntkio.ImageDeserializer("m.txt", cntkio.StreamDefs(i=cntkio.StreamDef(field="image"), x=cntkio.StreamDef(
        field="label", shape=3, transforms=[T.mean("m.xml")]))), "transforms"),
])
def test_an_argument_the_deserializer_does_not_use_warns_naming_it(make, argument):
    with pytest.warns(cntkio.IgnoredArgumentWarning, match=r"StreamDef\(%s=" % argument) as record:
        make()
    assert record[0].filename == __file__  # points at the caller


def test_arguments_that_are_used_or_left_at_their_default_do_not_warn(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cntkio.CTFDeserializer("d.ctf", cntkio.StreamDefs(x=cntkio.StreamDef(field="x", shape=2, is_sparse=True,
                                                                                 defines_mb_size=True)))
        cntkio.CBFDeserializer("d.cbf", cntkio.StreamDefs(x=cntkio.StreamDef(field="y", shape=2)))
        cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(x=cntkio.StreamDef(
            scp="a.scp", shape=3, context=(1, 1), broadcast=False, defines_mb_size=True, max_sequence_length=9)))
        cntkio.HTKMLFDeserializer("s.txt", cntkio.StreamDefs(x=cntkio.StreamDef(mlf="a.mlf", shape=3)))
        cntkio.ImageDeserializer("m.txt", cntkio.StreamDefs(i=cntkio.StreamDef(field="image", transforms=[]),
                                                            l=cntkio.StreamDef(field="label", shape=2)))


def test_a_device_warns_once_per_function(tmp_path):
    source = cntkio.MinibatchSource(cntkio.CTFDeserializer(write_ctf(tmp_path / "d.ctf", [1, 1]), [
        cntkio.StreamConfiguration("f", 2)]), randomize=False)
    cntkio._value._DEVICE_WARNED.discard("MinibatchSource.next_minibatch")
    with pytest.warns(cntkio.DeviceIgnoredWarning, match="device"):
        source.next_minibatch(1, device="gpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        source.next_minibatch(1, device="gpu")
        source.next_minibatch(1, device=None)


def test_max_sequence_length_leaves_longer_utterances_out(tmp_path):
    corpus = Corpus(tmp_path)
    limit = 8
    features = cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(features=cntkio.StreamDef(
        scp=str(corpus.scp), shape=DIM, max_sequence_length=limit)))
    assert "maxSequenceSize = %d" % limit in features.config_text()
    source = cntkio.MinibatchSource([features, corpus.labels()], randomize=False, max_sweeps=1)
    keys = [k for mb in iter(lambda: source.next_minibatch(1000), {}) for k in mb["features"].keys]
    expected = [k for k in corpus.keys if len(corpus.frames[k]) <= limit]
    assert keys == expected and len(expected) < len(corpus.keys)
    default = cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(features=cntkio.StreamDef(scp=str(corpus.scp),
                                                                                        shape=DIM)))
    assert "maxSequenceSize" not in default.config_text()  # 65535, the default: no limit, as in cntk.io


def test_an_empty_scp_list_is_refused_naming_the_stream():
    with pytest.raises(ValueError, match="stream 'f' has an empty list of scp files"):
        cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(f=cntkio.StreamDef(scp=[], shape=3)))


def test_a_missing_later_scp_file_is_an_oserror_naming_it(tmp_path):
    first = tmp_path / "a.scp"
    first.write_text("")
    with pytest.raises(OSError, match="b.scp"):
        cntkio.MinibatchSource(cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(
            f=cntkio.StreamDef(scp=[str(first), str(tmp_path / "b.scp")], shape=3))))


def test_a_transform_key_the_transform_does_not_read_warns_naming_it():
    crop = dict(T.crop(crop_type="randomside", side_ratio=0.5), cropRatio=0.8)
    with pytest.warns(cntkio.IgnoredArgumentWarning, match="'cropRatio'") as record:
        cntkio.ImageDeserializer("m.txt", cntkio.StreamDefs(i=cntkio.StreamDef(field="image", transforms=[crop])))
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cntkio.ImageDeserializer("m.txt", cntkio.StreamDefs(i=cntkio.StreamDef(field="image", transforms=[
            T.crop(crop_type="randomside", side_ratio=0.5), T.scale(2, 2, 3), T.color(0.1), T.mean("m.xml"),
            dict(type="Crop", HFLIP=False, seed=3), dict(type="Intensity", intensityStdDev=0.1)])))
