"""cntkio: CNTK's data readers (cntk.io) for today's Python, with NumPy, SciPy and PyTorch.

Scripts written for ``cntk.io`` run after ``import cntkio as io`` (or ``from cntkio import io``)::

    import cntkio as io
    source = io.MinibatchSource(io.CTFDeserializer("train.ctf", io.StreamDefs(
        features=io.StreamDef(field="x", shape=3), labels=io.StreamDef(field="y", shape=20, is_sparse=True))),
        randomize=False, max_sweeps=1)
    mb = source.next_minibatch(64)
    x = mb[source.streams.features].asarray()   # numpy [sequences, max_length, 3], padding masked by .mask
    y = mb[source.streams.labels].asarray()     # scipy.sparse.csr_matrix, one row per sample

Speech data: ``HTKFeatureDeserializer`` (SCP lists of HTK feature files, StreamDef ``scp``, ``context``,
``broadcast``) joined with ``HTKMLFDeserializer`` (MLF labels); images: ``ImageDeserializer`` and
``Base64ImageDeserializer`` with ``cntkio.transforms`` (``crop``, ``scale``, ``mean``, ``color``)::

    source = io.MinibatchSource([
        io.HTKFeatureDeserializer(io.StreamDefs(features=io.StreamDef(scp="train.scp", shape=39, context=(5, 5)))),
        io.HTKMLFDeserializer("states.list", io.StreamDefs(labels=io.StreamDef(mlf="train.mlf", shape=132)))],
        frame_mode=True)
    images = io.MinibatchSource(io.ImageDeserializer("map.txt", io.StreamDefs(
        features=io.StreamDef(field="image", transforms=[io.transforms.crop(crop_type="randomside", side_ratio=0.8),
                                                         io.transforms.scale(width=224, height=224, channels=3)]),
        labels=io.StreamDef(field="label", shape=1000))))

``cntkio.torch.MinibatchDataset`` feeds PyTorch. Errors: ValueError for bad arguments, ``cntkio.ConfigError``
(a ValueError) for configurations, ``cntkio.FormatError`` (a ValueError) for malformed data, OSError for I/O;
their messages name the file and line/column or byte offset.
"""

from . import _core
from ._core import ConfigError, FormatError

__version__ = _core.__version__  # the C++ library's version (CMake's project version)
from ._deserializers import (
    Base64ImageDeserializer,
    CBFDeserializer,
    CTFDeserializer,
    HTKFeatureDeserializer,
    HTKMLFDeserializer,
    IgnoredArgumentWarning,
    ImageDeserializer,
    Record,
    StreamConfiguration,
    StreamDef,
    StreamDefs,
)
from ._source import (
    DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS,
    FULL_DATA_SWEEP,
    DataType,
    INFINITELY_REPEAT,
    MinibatchData,
    MinibatchDict,
    MinibatchSource,
    SkippedDataWarning,
    SkipReport,
    StorageFormat,
    StreamInformation,
    TraceLevel,
    merge_checkpoint_states,
)
from ._user_deserializer import UserDeserializer
from ._ctf_text import _is_tensor, sequence_to_cntk_text_format  # noqa: F401 -- cntk.io had _is_tensor too
from ._value import DeviceIgnoredWarning, Value
from ._user_source import MinibatchSourceFromData, UserMinibatchSource
from . import transforms, typing


def worker_from_environment():
    """This process's rank and the process count from the MPI or torch.distributed launcher's environment:
    a dict with rank, count, local_rank and source."""
    return _core.worker_from_environment()


__all__ = [
    "Base64ImageDeserializer", "CBFDeserializer", "CTFDeserializer", "ConfigError",
    "DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS", "DataType", "DeviceIgnoredWarning", "FULL_DATA_SWEEP", "FormatError",
    "HTKFeatureDeserializer", "HTKMLFDeserializer", "INFINITELY_REPEAT", "IgnoredArgumentWarning", "ImageDeserializer",
    "MinibatchData", "MinibatchDict", "MinibatchSource", "MinibatchSourceFromData", "Record", "SkipReport",
    "SkippedDataWarning", "StorageFormat", "StreamConfiguration", "StreamDef", "StreamDefs", "StreamInformation",
    "TraceLevel", "UserDeserializer", "UserMinibatchSource", "Value", "merge_checkpoint_states",
    "sequence_to_cntk_text_format", "transforms", "typing", "worker_from_environment",
]


def __getattr__(name):
    # `import cntkio` then `cntkio.io`, as `import cntk` then `cntk.io`: imported on first use (io imports this
    # package, so it cannot be imported above).
    if name == "io":
        import importlib

        return importlib.import_module(".io", __name__)
    raise AttributeError("module 'cntkio' has no attribute %r" % name)
