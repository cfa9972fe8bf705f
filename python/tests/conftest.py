"""Shared fixtures of the cntkio Python tests (run with PYTHONPATH=<build>/python; see scripts/test.sh)."""

import os
import pathlib

import pytest

import cntkio

REPO = pathlib.Path(__file__).resolve().parents[2]


def build_dir():
    """The build tree holding the imported module (<build>/python/cntkio/_core*.so) and the cntkio CLI."""
    if os.environ.get("CNTKIO_BUILD_DIR"):
        return pathlib.Path(os.environ["CNTKIO_BUILD_DIR"])
    return pathlib.Path(cntkio._core.__file__).resolve().parents[2]


def images_built():
    """Whether this build has the image format (CNTKIO_WITH_IMAGES, on by default)."""
    return "ImageDeserializer" in cntkio._core.known_deserializer_types()


requires_images = pytest.mark.skipif(not images_built(),
                                     reason="the image format is left out of this build (CNTKIO_WITH_IMAGES=OFF)")


def conformance_dir():
    return pathlib.Path(os.environ.get("CNTKIO_CONFORMANCE_DIR", REPO.parent / "shared" / "conformance"))


@pytest.fixture(scope="session")
def cli():
    path = build_dir() / "cntkio"
    if not path.exists():
        pytest.fail("the cntkio CLI was not found at %s (set CNTKIO_BUILD_DIR)" % path)
    return str(path)


def write_ctf(path, lengths, label_dim=5, first=0):
    """Sequence i has lengths[i - first] steps; step t: |f i t (dense, dim 2) and, on step 0 only, |l with the
    one-hot index i % label_dim holding the value i + 1 (sparse). Ids start at `first` (shards of one corpus).
    Returns the path as a string."""
    with open(path, "w") as out:
        for i, n in enumerate(lengths, start=first):
            for t in range(n):
                label = " |l %d:%d" % (i % label_dim, i + 1) if t == 0 else ""
                out.write("%d |f %d %d%s\n" % (i, i, t, label))
    return str(path)


def ctf_source(path, label_dim=5, **kwargs):
    streams = cntkio.StreamDefs(features=cntkio.StreamDef(field="f", shape=2),
                                labels=cntkio.StreamDef(field="l", shape=label_dim, is_sparse=True))
    return cntkio.MinibatchSource(cntkio.CTFDeserializer(path, streams), **kwargs)


def sequence_ids(mb, stream="features"):
    """The sequence ids (first feature value) of the sequences of a minibatch, in order."""
    return [int(s[0, 0]) for s in mb[stream].as_sequences()]


def read_all(source, minibatch_size, **kwargs):
    """Every minibatch until the source is exhausted: list of (sequence ids, end_of_sweep)."""
    out = []
    while True:
        mb = source.next_minibatch(minibatch_size, **kwargs)
        if not mb:
            return out
        out.append((sequence_ids(mb), mb["features"].end_of_sweep))
