"""Start-up (issue #25 item 4): `import cntkio` loads neither OpenCV nor the other image libraries (the image
format is the component cntkio_image.so, loaded when an image deserializer is first used), nor torch, cv2
or SciPy. Each check runs in a fresh interpreter and reads what it loaded from /proc/self/maps and
sys.modules. Timings are measured by bench/startup, not asserted here."""

import base64
import json
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import zlib

import pytest

import cntkio
from conftest import requires_images

PACKAGE = pathlib.Path(cntkio.__file__).resolve().parent
HEAVY_LIBRARIES = ("libopencv", "libzip", "libturbojpeg", "cntkio_image")

# Prints what the interpreter has loaded after the snippet ran: heavy libraries mapped, heavy modules imported.
REPORT = """
import json, sys
maps = open("/proc/self/maps").read()
print(json.dumps({"libraries": sorted({line.split()[-1].rsplit("/", 1)[-1] for line in maps.splitlines()
                                       if any(name in line for name in %r)}),
                  "modules": sorted(m for m in ("cv2", "torch", "scipy") if m in sys.modules)}))
""" % (HEAVY_LIBRARIES,)


def run_python(snippet, pythonpath, cwd):
    env = {k: v for k, v in os.environ.items() if k != "CNTKIO_COMPONENT_PATH"}
    env["PYTHONPATH"] = str(pythonpath)
    done = subprocess.run([sys.executable, "-c", snippet + REPORT], env=env, cwd=cwd, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def png_1x1():
    """A one-pixel 8-bit RGB PNG, written without any imaging library."""
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\x10\x20\x30")) + chunk(b"IEND", b""))


READ_ONE_IMAGE = """
import cntkio
streams = cntkio.StreamDefs(features=cntkio.StreamDef(field="image"),
                            labels=cntkio.StreamDef(field="label", shape=2))
source = cntkio.MinibatchSource(cntkio.Base64ImageDeserializer("b64.txt", streams), randomize=False, max_sweeps=1)
mb = source.next_minibatch(1)
assert mb[source.streams.features].asarray().ravel().tolist() == [0x30, 0x20, 0x10], "pixels"
"""


@pytest.fixture
def base64_map(tmp_path):
    (tmp_path / "b64.txt").write_text("1\t%s\n" % base64.b64encode(png_1x1()).decode())
    return tmp_path


def test_import_loads_no_image_library_nor_torch(tmp_path):
    loaded = run_python("import cntkio\nimport cntkio.io\n", PACKAGE.parent, tmp_path)
    assert loaded == {"libraries": [], "modules": []}


def test_ctf_reading_loads_no_image_library(tmp_path):
    (tmp_path / "a.ctf").write_text("0 |x 1 2\n1 |x 3 4\n")
    snippet = ("import cntkio\n"
               "s = cntkio.MinibatchSource(cntkio.CTFDeserializer('a.ctf', cntkio.StreamDefs(\n"
               "    x=cntkio.StreamDef(field='x', shape=2))), randomize=False, max_sweeps=1)\n"
               "assert s.next_minibatch(2)[s.streams.x].num_samples == 2\n")
    assert run_python(snippet, PACKAGE.parent, tmp_path)["libraries"] == []


@requires_images
def test_an_image_deserializer_loads_the_image_component(base64_map):
    loaded = run_python(READ_ONE_IMAGE, PACKAGE.parent, base64_map)
    assert "cntkio_image.so" in loaded["libraries"]
    assert any(name.startswith("libopencv_imgcodecs") for name in loaded["libraries"])
    assert loaded["modules"] == []


@requires_images
def test_a_missing_image_component_is_a_clear_error(base64_map, tmp_path):
    # The package without its image component: CTF still reads, images fail naming the component and where
    # it was looked for.
    copy = tmp_path / "site" / "cntkio"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("cntkio_image.so", "__pycache__"))
    body = "".join("    " + line + "\n" for line in READ_ONE_IMAGE.strip().splitlines() if line != "import cntkio")
    snippet = ("import json\nimport cntkio\ntry:\n" + body +
               "except OSError as e:\n    print(json.dumps(str(e)))\nelse:\n    raise SystemExit('no error')\n")
    env = {k: v for k, v in os.environ.items() if k != "CNTKIO_COMPONENT_PATH"}
    env["PYTHONPATH"] = str(copy.parent)
    done = subprocess.run([sys.executable, "-c", snippet], env=env, cwd=base64_map, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    message = json.loads(done.stdout.strip().splitlines()[0])
    assert "image component" in message
    assert "ImageDeserializer" in message
    assert str(copy.resolve() / "cntkio_image.so") + " (not there)" in message
    assert "CNTKIO_COMPONENT_PATH" in message
