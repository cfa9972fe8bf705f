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


def test_a_file_size_limit_is_an_io_error_of_the_cli_not_a_signal(tmp_path, cli):
    # ulimit -f: the write fails with EFBIG (SIGXFSZ ignored), so the CLI reports it (exit 5) and leaves
    # nothing at the output's name or beside it
    import resource
    import subprocess

    from conftest import write_ctf

    data = write_ctf(tmp_path / "d.ctf", [3] * 4000)
    out = tmp_path / "out.bin"

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))

    result = subprocess.run([cli, "convert", "--stream", "features:f:2:dense", "--stream", "labels:l:5:sparse", data,
                             str(out)], preexec_fn=limit, capture_output=True, text=True)
    assert result.returncode == 5, (result.returncode, result.stderr)
    assert result.stderr.startswith("error:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.ctf"]


def test_the_cli_refuses_an_output_that_is_one_of_its_inputs(tmp_path, cli):
    """`convert a.ctf a.ctf`, a link to the input, or a dump written over the reader's data or config would
    replace the data being read: each is refused (exit 2) and the input keeps every byte."""
    import subprocess
    data = tmp_path / "d.ctf"
    text = "0 |x 1 2 3 |y 1\n1 |x 4 5 6 |y 2\n"
    data.write_text(text)
    (tmp_path / "link.ctf").symlink_to(data)
    config = tmp_path / "r.cntk"
    config.write_text('R = [ reader = [ readerType = "CNTKTextFormatReader" ; file = "%s" ; randomize = false\n'
                      '  input = [ x = [ dim = 3 ; format = "dense" ] ] ] ]\n' % data)
    runs = [["convert", str(data), str(data), "--stream", "x:x:3:dense"],
            ["convert", str(tmp_path / "link.ctf"), str(data), "--stream", "x:x:3:dense"],
            ["convert-htk", str(data), str(data), "--stream", "x:3"],
            ["dump", "--config", str(config), "--section", "R", "--mb-size", "4", "--output", str(data)],
            ["dump", "--config", str(config), "--section", "R", "--mb-size", "4", "--output", str(config)]]
    for args in runs:
        result = subprocess.run([cli] + args, capture_output=True, text=True)
        assert result.returncode == 2, (args, result.stderr)
        assert "a file this command reads" in result.stderr, (args, result.stderr)
        assert data.read_text() == text, args
    out = tmp_path / "out.txt"
    result = subprocess.run([cli, "dump", "--config", str(config), "--section", "R", "--mb-size", "4", "--output",
                             str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert out.exists()
