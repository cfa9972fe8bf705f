"""Paths that cannot name a file: a NUL byte is a ValueError in every deserializer (the operating system would
cut the path there and read another file), and a FIFO or directory is an OSError at once (issue #21)."""

import os

import pytest

import cntkio
from conftest import images_built


def _ctf(path):
    return cntkio.CTFDeserializer(path, cntkio.StreamDefs(a=cntkio.StreamDef(field="a", shape=1)))


def _cbf(path):
    return cntkio.CBFDeserializer(path, cntkio.StreamDefs(a=cntkio.StreamDef(field="a", shape=1)))


def _htk(path):
    return cntkio.HTKFeatureDeserializer(cntkio.StreamDefs(f=cntkio.StreamDef(shape=3, scp=path)))


def _image(path):
    return cntkio.ImageDeserializer(
        path, cntkio.StreamDefs(image=cntkio.StreamDef(field="image"), label=cntkio.StreamDef(field="label", shape=2)))


MAKERS = {"ctf": _ctf, "cbf": _cbf, "htk": _htk}
if images_built():
    MAKERS["image"] = _image


def _read(deserializer):
    source = cntkio.MinibatchSource(deserializer, randomize=False)
    source.next_minibatch(1)


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_a_path_with_a_nul_byte_is_a_value_error_not_another_file(tmp_path, kind):
    real = tmp_path / "d.txt"
    real.write_text("0 |a 1\n")
    with pytest.raises(ValueError, match="holds a NUL byte"):
        _read(MAKERS[kind](str(real) + "\0x"))


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_a_fifo_or_a_directory_is_refused_at_once(tmp_path, kind):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        with pytest.raises(OSError, match="not a regular file|is a directory"):
            _read(MAKERS[kind](str(path)))
