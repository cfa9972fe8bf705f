"""The cntk.io surface: MinibatchSource and MinibatchData (the deserializer definitions are in _deserializers).

A MinibatchSource built from deserializer objects is described as a typed ReaderSpec (cntkio._core), the spec
CNTK's own translation of MinibatchSourceConfig into a reader configuration compiles to (spec pipeline.md §1.3),
and read by cntkio's C++ pipeline, so Python and C++ read the same sequences in the same order.
"""

import enum
import json
import warnings

import numpy as np

from . import _core
from ._deserializers import Record, _count, _Deserializer, reader_spec, reader_text
from ._user_deserializer import UserDeserializer, user_deserializer_definition
from ._value import Value, _warn_device

INFINITELY_REPEAT = _core.INFINITELY_REPEAT
"""Read forever (the default of ``max_samples`` and ``max_sweeps``)."""
FULL_DATA_SWEEP = _core.FULL_DATA_SWEEP
"""``max_samples`` value meaning one sweep over the data."""
DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS = 128
"""4 GiB / 32 MiB chunks, CNTK's default randomization window."""


class TraceLevel(enum.IntEnum):
    """Verbosity of the reader's log on stderr (cntk.logging.TraceLevel)."""

    Error = 0
    Warning = 1
    Info = 2


# ----------------------------------------------------------------------------------------------------------
# Streams and minibatch data


class StorageFormat(enum.IntEnum):
    """``StreamInformation.m_storage_format``: CNTK's StorageFormat values."""

    Dense = 0
    SparseCSC = 1


class DataType(enum.IntEnum):
    """``StreamInformation.m_element_type``: CNTK's DataType values."""

    Unknown = 0
    Float = 1
    Double = 2


def _sample_dtype(dtype):
    """numpy.float32 or numpy.float64 for ``dtype`` as CNTK's sanitize_dtype_cntk maps it: integer types (and
    Python's int) to float32, Python's float to float64; ValueError for others."""
    if dtype is int or dtype is float:
        return np.float32 if dtype is int else np.float64
    if isinstance(dtype, str) and dtype in ("float", "double"):
        return np.float32 if dtype == "float" else np.float64
    try:
        kind = np.dtype(dtype)
    except TypeError:
        raise ValueError("data type %r is not supported (float32 or float64)" % (dtype,)) from None
    if kind.kind in "iu" or kind == np.float32:
        return np.float32
    if kind == np.float64:
        return np.float64
    raise ValueError("data type %r is not supported (float32 or float64)" % (dtype,))


class StreamInformation:
    """Describes one stream of a MinibatchSource: ``name``, ``id``, ``storage_format`` ('dense' or 'sparse'),
    ``dtype`` (numpy.float32/float64) and ``shape`` (the sample shape). Hashable; a key of the minibatch dict.

    Made as in cntk.io, ``StreamInformation(name, stream_id, storage_format, dtype, shape, defines_mb_size=False)``
    (a UserMinibatchSource's ``stream_infos()`` returns them); integer dtypes become float32, as in CNTK. CNTK's
    field names work too: ``m_name``, ``m_id``, ``m_storage_format`` (StorageFormat), ``m_element_type``
    (DataType), ``m_sample_layout`` (the sample shape, in NumPy's order), ``m_defines_mb_size``,
    ``sample_shape``. ``alias`` (keyword only) is the stream's name in the file, where it has one."""

    __slots__ = ("name", "id", "storage_format", "dtype", "shape", "alias", "defines_mb_size")

    def __init__(self, name, stream_id, storage_format, dtype, shape, defines_mb_size=False, *, alias=""):
        if storage_format not in ("dense", "sparse"):
            raise ValueError("storage_format must be 'dense' or 'sparse', got %r" % (storage_format,))
        self.name = str(name)
        self.id = int(stream_id)
        self.storage_format = storage_format
        self.dtype = _sample_dtype(dtype)
        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
        self.alias = alias
        self.defines_mb_size = bool(defines_mb_size)

    # CNTK's fields are writable (its own constructor assigns them); assigning one sets the field it mirrors.
    def _set_name(self, value):
        self.name = str(value)

    def _set_id(self, value):
        self.id = int(value)

    def _set_storage(self, value):
        if value in (StorageFormat.Dense, "dense"):
            self.storage_format = "dense"
        elif value in (StorageFormat.SparseCSC, "sparse"):
            self.storage_format = "sparse"
        else:
            raise ValueError("m_storage_format must be StorageFormat.Dense or StorageFormat.SparseCSC, got %r"
                             % (value,))

    def _set_element_type(self, value):
        if value == DataType.Float:
            self.dtype = np.float32
        elif value == DataType.Double:
            self.dtype = np.float64
        else:
            raise ValueError("m_element_type must be DataType.Float or DataType.Double, got %r" % (value,))

    def _set_shape(self, value):
        self.shape = (int(value),) if isinstance(value, (int, np.integer)) else tuple(int(d) for d in value)

    def _set_defines(self, value):
        self.defines_mb_size = bool(value)

    m_name = property(lambda self: self.name, _set_name)
    m_id = property(lambda self: self.id, _set_id)
    m_storage_format = property(lambda self: StorageFormat.SparseCSC if self.is_sparse else StorageFormat.Dense,
                                _set_storage)
    m_element_type = property(lambda self: DataType.Double if self.dtype == np.float64 else DataType.Float,
                              _set_element_type)
    m_sample_layout = property(lambda self: self.shape, _set_shape)
    m_defines_mb_size = property(lambda self: self.defines_mb_size, _set_defines)
    sample_shape = property(lambda self: self.shape)
    is_sparse = property(lambda self: self.storage_format == "sparse")

    def _key(self):
        return (self.name, self.id, self.storage_format, self.dtype, self.shape)

    def __eq__(self, other):
        return isinstance(other, StreamInformation) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "StreamInformation(name=%r, id=%d, storage_format=%r, dtype=%s, shape=%r)" % (
            self.name, self.id, self.storage_format, np.dtype(self.dtype).name, self.shape)


class MinibatchData:
    """The data of one stream in one minibatch (cntk.io.MinibatchData): ``data`` is its Value; ``asarray()``,
    ``mask``, ``shape`` and ``as_sequences()`` are the Value's.

    Dense streams: ``asarray()`` is a NumPy array ``[sequences, max_length, *shape]`` (one row per sequence,
    padded with zeros; ``mask`` says which entries are data), ``[samples, 1, *shape]`` in frame mode (CNTK's
    sequence axis of length 1, mask ``[samples, 1]``), and ``[slots, truncation_length, *shape]`` with truncated
    BPTT (CNTK's packed rows, so a slot continues its sequence in the next minibatch). Sparse streams:
    ``asarray()`` is a ``scipy.sparse.csr_matrix`` with one row per sample, the samples of sequence i in rows
    ``offsets[i]:offsets[i+1]``. Arrays view the reader's buffer when its layout allows it (no copy); the array
    keeps the buffer alive. Values are float32 (or float64 for ``precision = double`` configs).

    A UserMinibatchSource makes them as in CNTK: ``MinibatchData(value, num_sequences, num_samples, sweep_end)``,
    ``value`` a Value or what ``Value(...)`` takes.
    """

    def __init__(self, value, num_sequences, num_samples, sweep_end):
        self._value = value if isinstance(value, Value) else Value(value)
        self._num_sequences = _count(num_sequences, "MinibatchData: num_sequences")
        self._num_samples = _count(num_samples, "MinibatchData: num_samples")
        self._end_of_sweep = bool(sweep_end)
        self._info = None
        self._keys = None
        self._arrays = None
        self._frame = self._packed = False

    @classmethod
    def _from_reader(cls, info, arrays, end_of_sweep, keys, sample_shape=None, packing="sequence"):
        """The MinibatchData of a reader's arrays (cntkio._core) of stream ``info``."""
        if sample_shape is not None and "value" in arrays:
            v = arrays["value"]
            arrays["value"] = v.reshape(v.shape[:-1] + tuple(sample_shape))
        self = cls.__new__(cls)
        self._value = Value._from_arrays(arrays, packing)
        if "value" not in arrays and info is not None and len(info.shape) > 1:
            self._value._sample_shape = tuple(info.shape)  # a sparse sample of several axes: its logical shape
        self._num_sequences = arrays["num_sequences"]
        self._num_samples = arrays["num_samples"]
        self._end_of_sweep = bool(end_of_sweep)
        self._info = info
        self._keys = keys
        self._arrays = arrays
        self._frame = packing == "frame"
        self._packed = packing == "truncated"
        return self

    num_sequences = property(lambda self: self._num_sequences, doc="Sequences in this minibatch.")
    num_samples = property(lambda self: self._num_samples, doc="Samples (not padding) in it.")
    number_of_sequences = num_sequences
    number_of_samples = num_samples
    end_of_sweep = property(lambda self: self._end_of_sweep,
                            doc="Whether the data reaches the end of a sweep or crosses it.")
    sweep_end = end_of_sweep
    is_sparse = property(lambda self: self._value.is_sparse, doc="Whether the stream is sparse.")
    mask = property(lambda self: self._value.mask,
                    doc="uint8 array over the padded shape: 2 = a sequence begins, 1 = data, 0 = padding.")
    lengths = property(lambda self: self._value.lengths, doc="Samples of each sequence (int64).")
    offsets = property(lambda self: self._value.offsets,
                       doc="Row where each sequence starts in the sample-wise (sparse) matrix; n+1 entries.")
    zero_copy = property(lambda self: bool(self._arrays is not None and self._arrays["zero_copy"]),
                         doc="Whether the array views the reader's buffer instead of a copy.")
    stream_info = property(lambda self: self._info, doc="The StreamInformation of a reader's stream (else None).")

    @property
    def keys(self):
        """The sequence keys of the rows (cntkio extension; None for data made by a user source)."""
        if self._arrays is None:
            return None
        entries = self._arrays["layout"][2]
        return [self._keys[int(i)] for i in entries[:, 0]]

    @property
    def layout(self):
        """(num_parallel, num_time_steps, entries): CNTK's packing of this stream; entries[i] = (sequence index,
        row, t_begin, t_end) of row i of the array (cntkio extension; None for data made by a user source)."""
        return None if self._arrays is None else self._arrays["layout"]

    @property
    def data(self):
        """The Value (cntk.Value's counterpart) holding the data."""
        return self._value

    @property
    def shape(self):
        """Shape of the (padded) data: ``asarray().shape`` for dense, the same logical shape for sparse."""
        return self._value.shape

    def asarray(self):
        """The data: a NumPy array (dense) or a scipy.sparse.csr_matrix with one row per sample (sparse)."""
        return self._value.asarray()

    def as_sequences(self, variable=None):
        """A list with one array per sequence, padding removed: ``[length, *shape]`` NumPy arrays, or
        csr_matrix slices for sparse streams."""
        return self._value.as_sequences(variable)

    def __array__(self, dtype=None, copy=None):
        return self._value.__array__(dtype, copy)

    def __len__(self):
        return self.num_sequences

    def __repr__(self):
        return "MinibatchData(%s, num_sequences=%d, num_samples=%d, shape=%r, end_of_sweep=%s)" % (
            self._info.name if self._info is not None else "-", self.num_sequences, self.num_samples, self.shape,
            self.end_of_sweep)


class MinibatchDict(dict):
    """The result of next_minibatch: StreamInformation (or input_map key) → MinibatchData; a stream's name
    also works as a key."""

    def __missing__(self, key):
        if isinstance(key, str):
            for k, v in self.items():
                if isinstance(k, StreamInformation) and k.name == key:
                    return v
        raise KeyError(key)


# ----------------------------------------------------------------------------------------------------------
# MinibatchSource


def _byte_size(value, what):
    """Bytes from a count or a size text such as '4GiB' (None: 0)."""
    if value is None:
        return 0
    if isinstance(value, str):
        size = _core.parse_byte_size(value.strip())
        if size is None or size >= 2 ** 64:
            raise ValueError("%s must be a byte count or a size such as '4GiB' or '512MB', got %r" % (what, value))
        return size
    return _count(value, what)


class MinibatchSource:
    """A composite reader over one or more deserializers, as cntk.io.MinibatchSource.

    Args:
        deserializers: one deserializer (CTFDeserializer, CBFDeserializer, HTKFeatureDeserializer,
            HTKMLFDeserializer, ImageDeserializer, Base64ImageDeserializer, or a UserDeserializer written in
            Python) or a list; several are joined by sequence key, the first one being the primary.
        max_samples: samples to read in total (INFINITELY_REPEAT, FULL_DATA_SWEEP or a count); exclusive with
            max_sweeps.
        max_sweeps: sweeps to read in total (INFINITELY_REPEAT or a count).
        randomization_window_in_chunks: window in chunks (DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS).
        randomization_window_in_samples: window in samples (0: use the chunk window).
        randomization_seed: seed of sweep 0; sweep k uses seed + k.
        trace_level: 0 errors, 1 warnings, 2 info (TraceLevel).
        multithreaded_deserializer: None (auto), True or False; results never depend on it.
        frame_mode: every sample is its own sequence; dense arrays are ``[samples, 1, *shape]`` (as CNTK's).
        truncation_length: truncated BPTT with this many steps per slot (0: off).
        randomize: False reads in file order (both windows become 0).
        max_errors: malformed sequences to skip before failing.
        chunk_cache: (cntkio extension) keep the decoded chunks in memory for later sweeps, up to this many
            bytes of their data: a count or a size such as ``"4GiB"``; None or 0: off. The minibatches are the
            same; a data file that changes drops the cache.
    """

    def __init__(self, deserializers, max_samples=INFINITELY_REPEAT, max_sweeps=INFINITELY_REPEAT,
                 randomization_window_in_chunks=DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS,
                 randomization_window_in_samples=0, randomization_seed=0, trace_level=TraceLevel.Warning,
                 multithreaded_deserializer=None, frame_mode=False, truncation_length=0, randomize=True,
                 max_errors=0, chunk_cache=None):
        if not isinstance(deserializers, (list, tuple)):
            deserializers = [deserializers]
        if not deserializers:
            raise ValueError("MinibatchSource needs at least one deserializer")
        deserializers = [user_deserializer_definition(d) if isinstance(d, UserDeserializer) else d
                         for d in deserializers]
        for d in deserializers:
            if not isinstance(d, _Deserializer):
                raise TypeError("not a cntkio deserializer: %r (use CTFDeserializer, CBFDeserializer, "
                                "HTKFeatureDeserializer, HTKMLFDeserializer, ImageDeserializer, "
                                "Base64ImageDeserializer or a UserDeserializer)" % (d,))
        _check_limits(max_samples, max_sweeps)
        randomization_window_in_chunks = _count(randomization_window_in_chunks, "randomization_window_in_chunks")
        randomization_window_in_samples = _count(randomization_window_in_samples,
                                                 "randomization_window_in_samples")
        if frame_mode and truncation_length != 0:
            raise ValueError("frame_mode and truncation_length are mutually exclusive")
        if not randomize:
            randomization_window_in_chunks = 0
            randomization_window_in_samples = 0
        # Mutually exclusive when both are set explicitly; a sample window alone overrides the default chunk one.
        if randomization_window_in_samples != 0 and \
                randomization_window_in_chunks not in (0, DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS):
            raise ValueError("randomization_window_in_chunks and randomization_window_in_samples are mutually "
                             "exclusive; set only one of them")
        spec = reader_spec(deserializers, randomization_window_in_chunks, randomization_window_in_samples,
                           _count(randomization_seed, "randomization_seed"), _count(trace_level, "trace_level"),
                           multithreaded_deserializer, frame_mode, _count(truncation_length, "truncation_length"),
                           _count(max_errors, "max_errors"))
        spec.source.chunk_cache_bytes = _byte_size(chunk_cache, "chunk_cache")
        shapes = {}
        for d in deserializers:
            shapes.update(d.sample_shapes)
        self._spec = spec
        self._setup(lambda: _core.Reader.from_spec(spec), max_samples, max_sweeps, shapes)
        for d in deserializers:
            self._check_declared_streams(getattr(d, "declared_streams", {}), d.type)

    def _check_declared_streams(self, declared, what):
        """ValueError when a stream's dimension or storage given to a deserializer that takes them from the file
        (CBF) differs from the file's."""
        for name, (dim, sparse) in declared.items():
            found = [i for i in self._infos if i.name == name]
            if not found:
                raise ValueError("%s: the file has no stream '%s' (streams: %s)"
                                 % (what, name, ", ".join(i.name for i in self._infos)))
            info = found[0]
            if dim is not None and int(np.prod(info.shape)) != dim:
                raise ValueError("%s: stream '%s' has dimension %d in the file, not %d as given"
                                 % (what, name, int(np.prod(info.shape)), dim))
            if sparse and not info.is_sparse:
                raise ValueError("%s: stream '%s' is dense in the file, not sparse as given" % (what, name))

    @property
    def config_text(self):
        """The reader section in CNTK's config language that reads as this source does (``reader = [...]``),
        rendered from its ReaderSpec for reading and debugging: the source is built from the spec, not from this
        text. None for a source made from a config (from_config). ValueError where a file name or stream field
        holds what the config language cannot express (a double quote, '$', a line break, '#' after a space or
        tab), which the source itself reads."""
        return None if self._spec is None else reader_text(self._spec)

    @classmethod
    def from_config(cls, path, section, overrides=(), reader_section="reader", max_samples=INFINITELY_REPEAT,
                    max_sweeps=INFINITELY_REPEAT):
        """A source for the reader ``config[section][reader_section]`` of CNTK config file(s) ``path``, with
        command-line style ``key=value`` overrides. Relative data paths resolve against the current directory.
        ``next_minibatch`` reads with cntk.io semantics; ``epoch_minibatches`` with BrainScript (v1) epochs."""
        files = [path] if isinstance(path, str) else list(path)
        overrides = [overrides] if isinstance(overrides, str) else list(overrides)
        blocks = [b for b in (section, reader_section) if b]
        _check_limits(max_samples, max_sweeps)
        self = cls.__new__(cls)
        self._spec = None
        self._setup(lambda: _core.Reader.from_files(files, overrides, blocks), max_samples, max_sweeps, {})
        return self

    def _setup(self, factory, max_samples, max_sweeps, shapes):
        self._factory = factory
        self._reader = factory()
        self._max_samples = max_samples
        self._max_sweeps = max_sweeps
        self._shapes = shapes
        self._mode = None  # "v1" or "v2" once reading
        self._packing = self._reader.packing  # "sequence", "frame" or "truncated"
        # Truncated BPTT delivers every stream dense, and CNTK's stream descriptions say so (CompositeDataReader).
        self._infos = [StreamInformation(s["name"], s["id"], "dense" if self._packing == "truncated" else s["storage"],
                                         s["dtype"],
                                         shapes.get(s["name"], s["shape"]), s["defines_mb_size"], alias=s["alias"])
                       for s in self._reader.streams()]
        self._streams = None
        self._skips_reported = False
        self._skips_due = False  # a sweep ended: check before the next read
        self._report_skips(stacklevel=4)  # a composite reader drops sequences with a missing key when created

    # -- what was left out

    def stats(self):
        """Where the reader's time went so far and what its chunk cache holds, as a dict: seconds per stage
        (``index_s``, ``load_s``, ``randomize_s``, ``pack_s``, ``chunk_wait_s``, ``minibatch_wait_s``), each
        loader thread's busy seconds (``loader_busy_s``) and ``chunk_cache`` (``budget_bytes``, ``bytes``,
        ``chunks``, ``hits``, ``misses``, ``invalidations``). (cntkio extension)"""
        return self._reader.stats()

    def skip_report(self):
        """A SkipReport of what the reader has left out so far (under max_errors, or sequences whose key is
        missing in another deserializer); false when nothing was. (cntkio extension)"""
        return SkipReport(self._reader.skip_report())

    def _report_skips_if_due(self):
        """The check after a sweep's end, made before the next read: a warning turned into an error then
        loses no minibatch (the one that ended the sweep was delivered)."""
        if self._skips_due:
            self._skips_due = False
            self._report_skips(stacklevel=4)

    def _report_skips(self, stacklevel=3):
        """Warns (SkippedDataWarning, once per source) when the reader has left data out. Called when the
        source is created, after each sweep's end and when reading stops; ``stacklevel`` points at the
        caller."""
        if self._skips_reported:
            return
        report = self.skip_report()
        if report:
            self._skips_reported = True
            warnings.warn("cntkio: the reader %s; MinibatchSource.skip_report() has the running counts" % report,
                          SkippedDataWarning, stacklevel=stacklevel)

    # -- streams

    def stream_infos(self):
        """The StreamInformation of every stream, in stream order."""
        return list(self._infos)

    @property
    def streams(self):
        """Record: stream name → StreamInformation."""
        if self._streams is None:
            self._streams = Record((i.name, i) for i in self._infos)
        return self._streams

    def stream_info(self, name):
        """The StreamInformation of the stream called ``name`` (ValueError if there is none or several)."""
        return _find_stream(self._infos, name)

    def __getitem__(self, name):
        return self.stream_info(name)

    # -- reading

    def next_minibatch(self, minibatch_size_in_samples, input_map=None, device=None, num_data_partitions=None,
                       partition_index=None):
        """The next minibatch of about ``minibatch_size_in_samples`` samples (for this partition: its share of
        them) as a dict StreamInformation → MinibatchData, or mapped through ``input_map`` (key → stream);
        an empty dict once max_samples/max_sweeps are reached. ``device``: None; another value is ignored with a
        DeviceIgnoredWarning (the arrays are in host memory)."""
        _warn_device(device, "MinibatchSource.next_minibatch")
        size = _count(minibatch_size_in_samples, "minibatch_size_in_samples", allow_zero=False)
        partitions = 1 if num_data_partitions is None else _count(num_data_partitions, "num_data_partitions",
                                                                  allow_zero=False)
        index = 0 if partition_index is None else _count(partition_index, "partition_index")
        if index >= partitions:
            raise ValueError("partition_index %d is not below num_data_partitions %d" % (index, partitions))
        if self._mode != "v2":
            self._reader.set_v2_limits(self._max_samples, self._max_sweeps)
            self._mode = "v2"
        self._report_skips_if_due()
        batch = self._reader.next_v2(size, partitions, index)
        if batch is None:
            self._report_skips()
            return MinibatchDict()
        self._skips_due = batch.end_of_sweep
        result = self._wrap(batch)
        if not input_map:
            return result
        return MinibatchDict((key, result[_resolve_stream(self, stream)]) for key, stream in input_map.items())

    def epoch_minibatches(self, minibatch_size, epoch_index=0, epoch_size=None, worker_rank=0, num_workers=1):
        """BrainScript (v1) reading, as ``cntkio dump`` does: yields the minibatch dicts of epoch
        ``epoch_index`` of ``epoch_size`` samples (None: one sweep) for worker ``worker_rank`` of
        ``num_workers``. Minibatches end at sweep boundaries. (cntkio extension)"""
        size = _core.FULL_SWEEP_EPOCH if epoch_size is None else _count(epoch_size, "epoch_size", False)
        self._reader.start_epoch(_count(minibatch_size, "minibatch_size", False), _count(epoch_index, "epoch_index"),
                                 size, _count(worker_rank, "worker_rank"), _count(num_workers, "num_workers", False))
        self._mode = "v1"
        while self._mode == "v1":
            self._report_skips_if_due()
            batch = self._reader.next_v1()
            if batch is None:
                self._report_skips()
                return
            self._skips_due = batch.end_of_sweep
            yield self._wrap(batch)

    def _wrap(self, batch):
        keys = batch.keys
        result = MinibatchDict()
        for i, info in enumerate(self._infos):
            shape = self._shapes.get(info.name)
            result[info] = MinibatchData._from_reader(info, batch.stream(i), batch.end_of_sweep, keys, shape,
                                                      self._packing)
        return result

    # -- checkpoints

    def get_checkpoint_state(self):
        """The reader's position as a dict (``minibatchSourcePosition`` is the global sample position)."""
        return json.loads(self._reader.state())

    def restore_from_checkpoint(self, checkpoint):
        """Continues from a dict returned by get_checkpoint_state (of this run, or merged by
        merge_checkpoint_states from all workers of a run with any number of workers)."""
        self._reader.restore(json.dumps(dict(checkpoint)))

    @property
    def current_position(self):
        """The checkpoint state (get) / restore_from_checkpoint (set)."""
        return self.get_checkpoint_state()

    @current_position.setter
    def current_position(self, position):
        self.restore_from_checkpoint(position)


def _check_limits(max_samples, max_sweeps):
    if max_samples != INFINITELY_REPEAT and max_sweeps != INFINITELY_REPEAT:
        raise ValueError("max_samples and max_sweeps are mutually exclusive; set only one of them")
    _count(max_samples, "max_samples", allow_zero=False)
    _count(max_sweeps, "max_sweeps", allow_zero=False)


def _find_stream(infos, name):
    """The one StreamInformation of ``infos`` called ``name``; ValueError if there is none or several."""
    found = [i for i in infos if i.name == name]
    if len(found) != 1:
        raise ValueError("%s stream named '%s' (streams: %s)" % ("no" if not found else "more than one", name,
                                                                ", ".join(i.name for i in infos)))
    return found[0]


def _resolve_stream(source, stream):
    if isinstance(stream, StreamInformation):
        return stream
    return source.stream_info(stream)


class SkippedDataWarning(UserWarning):
    """Issued once per MinibatchSource when its reader has left data out: rows, samples or sequences skipped
    under ``max_errors``/``maxErrors``, or sequences whose key is missing in another deserializer of a
    composite reader. ``MinibatchSource.skip_report()`` has the running counts."""


class SkipReport:
    """What a reader has left out so far (``MinibatchSource.skip_report()``): ``errors`` (input errors
    tolerated under maxErrors), ``rows_skipped``, ``samples_skipped``, ``sequences_skipped`` and
    ``first_locations`` (the first few, as ``file:line:column`` or ``sequence KEY (...)``). True when anything
    was left out; ``str()`` gives the one-line summary ``cntkio dump`` prints. Counts cover the reader's whole
    life: data read again in a later sweep counts again."""

    __slots__ = ("errors", "rows_skipped", "samples_skipped", "sequences_skipped", "first_locations", "_text")

    def __init__(self, report):
        self.errors = report["errors"]
        self.rows_skipped = report["rows_skipped"]
        self.samples_skipped = report["samples_skipped"]
        self.sequences_skipped = report["sequences_skipped"]
        self.first_locations = list(report["first_locations"])
        self._text = report["text"]

    def __bool__(self):
        return bool(self.errors or self.rows_skipped or self.samples_skipped or self.sequences_skipped)

    def __str__(self):
        return self._text

    def __repr__(self):
        return "SkipReport(%s)" % self._text


def merge_checkpoint_states(states):
    """Merges the checkpoint states of all workers of one run into one state from which any number of workers
    can continue with no sample lost or repeated (cntkio extension)."""
    return json.loads(_core.merge_reader_states([json.dumps(dict(s)) for s in states]))
