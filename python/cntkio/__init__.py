"""cntkio: CNTK's data readers (cntk.io) for today's Python, with NumPy, SciPy and PyTorch.

Scripts written for ``cntk.io`` run after ``import cntkio as io`` (or ``from cntkio import io``)::

    import cntkio as io
    source = io.MinibatchSource(io.CTFDeserializer("train.ctf", io.StreamDefs(
        features=io.StreamDef(field="x", shape=3), labels=io.StreamDef(field="y", shape=20, is_sparse=True))),
        randomize=False, max_sweeps=1)
    mb = source.next_minibatch(64)
    x = mb[source.streams.features].asarray()   # numpy [sequences, max_length, 3], padding masked by .mask
    y = mb[source.streams.labels].asarray()     # scipy.sparse.csr_matrix, one row per sample

``cntkio.torch.MinibatchDataset`` feeds PyTorch. Errors: ValueError for bad arguments, ``cntkio.ConfigError``
(a ValueError) for configurations, ``cntkio.FormatError`` (a ValueError) for malformed data, OSError for I/O;
their messages name the file and line/column or byte offset.
"""

from . import _core
from ._core import ConfigError, FormatError

__version__ = _core.__version__  # the C++ library's version (CMake's project version)
from ._source import (
    DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS,
    FULL_DATA_SWEEP,
    INFINITELY_REPEAT,
    CBFDeserializer,
    CTFDeserializer,
    MinibatchData,
    MinibatchDict,
    MinibatchSource,
    Record,
    StreamDef,
    StreamDefs,
    StreamInformation,
    TraceLevel,
    merge_checkpoint_states,
)


def worker_from_environment():
    """This process's rank and the process count from the MPI or torch.distributed launcher's environment:
    a dict with rank, count, local_rank and source."""
    return _core.worker_from_environment()


__all__ = [
    "CBFDeserializer", "CTFDeserializer", "ConfigError", "DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS",
    "FULL_DATA_SWEEP", "FormatError", "INFINITELY_REPEAT", "MinibatchData", "MinibatchDict", "MinibatchSource",
    "Record", "StreamDef", "StreamDefs", "StreamInformation", "TraceLevel", "merge_checkpoint_states",
    "worker_from_environment",
]
