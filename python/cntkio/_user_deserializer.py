"""UserDeserializer: a deserializer written in Python (cntk.io 2.7's class), read by cntkio's C++ pipeline.

A subclass describes its streams and chunks and returns a chunk's data on request. The pipeline treats it as
any registered deserializer: the block randomizer shuffles its chunks and sequences, workers read their share,
checkpoints restore, and frame, sequence and truncated-BPTT packing work. It may be joined with built-in
deserializers in one MinibatchSource (by sequence key, as a composite reader).

How the C++ side calls it (python/src/user_deserializer.cpp): once when the source is made, ``stream_infos()``,
``num_chunks()`` and ``get_chunk(i)`` for every chunk, keeping only the sequence lengths (the index that the
randomizer schedules by); later ``get_chunk(i)`` again, from the loader threads with the GIL taken, for each
chunk the reader needs. ``get_chunk`` must therefore return the same data each time it is called.
"""

import os
import threading

import numpy as np

from . import _core
from ._deserializers import Record

_TYPE_NAME = "PythonUserDeserializer"  # the type registered by the C++ bridge


class UserDeserializer:
    """Base class of a deserializer written in Python (cntk.io.UserDeserializer).

    Implement:
      * ``stream_infos()``: a list of ``StreamInformation(name, stream_id, storage_format, dtype, shape)``;
        ids 0, 1, ... in order. ``dtype`` is ignored for the values delivered: they are converted to the
        reader's precision (float32).
      * ``num_chunks()``: the number of chunks (at least 1). A chunk is the unit of loading and randomization.
      * ``get_chunk(chunk_id)``: a dict stream name → data for chunk ``chunk_id``, either in *sample mode* (a
        NumPy array ``[samples, *shape]`` or a ``scipy.sparse.csr_matrix`` ``[samples, dim]``: every row is a
        sequence of one sample) or in *sequence mode* (a list with one NumPy array ``[length, *shape]`` or
        csr_matrix ``[length, dim]`` per sequence). All streams of a chunk hold the same number of sequences.

    Sequence keys: the i-th sequence of the deserializer, counting through its chunks in order, has key i (the
    key a CTF file gives its i-th sequence when its lines carry no sequence id), which is how it joins other
    deserializers of a MinibatchSource. A sequence's length for minibatch and epoch sizes is its longest
    stream's number of samples.
    """

    def stream_infos(self):
        """The streams: a list of StreamInformation."""
        raise NotImplementedError("a UserDeserializer must implement stream_infos()")

    def num_chunks(self):
        """The number of chunks."""
        raise NotImplementedError("a UserDeserializer must implement num_chunks()")

    def get_chunk(self, chunk_id):
        """The data of chunk ``chunk_id``: dict stream name → array, csr_matrix, or a list of either."""
        raise NotImplementedError("a UserDeserializer must implement get_chunk(chunk_id)")


def _describe(user):
    return "%s.%s" % (type(user).__module__, type(user).__qualname__)


class _Adapter:
    """What the C++ bridge calls: checks the user's answers once and hands chunks over as flat arrays.

    The loader threads may want several chunks at once; ``get_chunk`` is called by one of them at a time (as
    CNTK did): user code written for CNTK keeps state between calls (a shared file handle, the global random
    generator seeded per chunk) that overlapping calls would mix up."""

    def __init__(self, user):
        self.user = user
        self.name = _describe(user)
        self._lock = threading.Lock()
        self._lock_pid = os.getpid()
        infos = list(user.stream_infos())
        if not infos:
            raise ValueError("%s.stream_infos() returned no stream" % self.name)
        self.streams = []  # (name, sparse, numpy shape, dim, defines_mb_size)
        seen = set()
        for position, info in enumerate(infos):
            name = getattr(info, "m_name", None) or getattr(info, "name", None)
            if not isinstance(name, str) or not name:
                raise TypeError("%s.stream_infos()[%d] is not a StreamInformation with a name" % (self.name, position))
            if name in seen:
                raise ValueError("%s.stream_infos(): two streams are named '%s'" % (self.name, name))
            seen.add(name)
            stream_id = getattr(info, "m_id", getattr(info, "id", position))
            if stream_id != position:
                raise ValueError("%s.stream_infos(): stream '%s' has id %r at position %d; ids must be 0, 1, ... "
                                 "in order" % (self.name, name, stream_id, position))
            storage = getattr(info, "storage_format", "dense")
            if storage not in ("dense", "sparse"):
                raise ValueError("%s.stream_infos(): stream '%s' has storage_format %r; 'dense' or 'sparse'"
                                 % (self.name, name, storage))
            shape = getattr(info, "sample_shape", None)
            if shape is None:
                shape = getattr(info, "shape")
            shape = (int(shape),) if np.isscalar(shape) else tuple(int(d) for d in shape)
            if any(d <= 0 for d in shape):
                raise ValueError("%s.stream_infos(): stream '%s' has shape %r; every dimension must be positive"
                                 % (self.name, name, shape))
            dim = int(np.prod(shape)) if shape else 1
            defines = bool(getattr(info, "m_defines_mb_size", getattr(info, "defines_mb_size", False)))
            self.streams.append((name, storage == "sparse", shape, dim, defines))
        count = user.num_chunks()
        if not isinstance(count, (int, np.integer)) or isinstance(count, bool) or count < 1:
            raise ValueError("%s.num_chunks() returned %r; it must be a positive int" % (self.name, count))
        if count >= 2 ** 32 - 1:
            raise ValueError("%s.num_chunks() returned %d; at most %d chunks" % (self.name, count, 2 ** 32 - 2))
        self.num_chunks = int(count)
        # As cntk.io's: the streams by name, for get_chunk (self.streams.x.name) and the user's other code.
        user.streams = Record(**{getattr(info, "m_name", None) or info.name: info for info in infos})

    def _user_chunk(self, chunk_id):
        if self._lock_pid != os.getpid():  # a forked child: the parent's lock may have been held at the fork
            self._lock, self._lock_pid = threading.Lock(), os.getpid()
        with self._lock:
            return self.user.get_chunk(chunk_id)

    def stream_list(self):
        """(name, sparse, C++ sample shape (column-major: NumPy's reversed), defines_mb_size) per stream."""
        return [(name, sparse, list(reversed(shape)) if shape else [1], defines)
                for name, sparse, shape, _, defines in self.streams]

    def chunk(self, chunk_id, dtype_name):
        """Chunk ``chunk_id`` as [(values, indices, nnz_counts, lengths)] per stream: values flat and
        contiguous in ``dtype_name``; for sparse streams int32 indices and uint32 nnz per sample (None for
        dense); lengths int64 per sequence."""
        dtype = np.dtype(dtype_name)
        where = "%s.get_chunk(%d)" % (self.name, chunk_id)
        data = self._user_chunk(chunk_id)
        if not hasattr(data, "get"):
            raise TypeError("%s returned %s; it must return a dict stream name -> data" % (where, type(data).__name__))
        out = []
        sequences = None
        for name, sparse, shape, dim, _ in self.streams:
            if name not in data:
                raise ValueError("%s returned no data for stream '%s' (it has: %s)"
                                 % (where, name, ", ".join(map(str, data.keys())) or "nothing"))
            flat = _flatten(data[name], sparse, shape, dim, dtype, "%s, stream '%s'" % (where, name))
            if sequences is None:
                sequences = len(flat[3])
            elif len(flat[3]) != sequences:
                raise ValueError("%s: stream '%s' has %d sequences, stream '%s' has %d; every stream of a chunk "
                                 "must hold the same sequences" % (where, name, len(flat[3]), self.streams[0][0],
                                                                   sequences))
            out.append(flat)
        extra = [k for k in data.keys() if k not in {s[0] for s in self.streams}]
        if extra:
            raise ValueError("%s returned data for stream(s) %s that stream_infos() does not declare"
                             % (where, ", ".join("'%s'" % k for k in extra)))
        if sequences == 0:
            raise ValueError("%s returned a chunk without sequences; every chunk must hold at least one" % where)
        longest = np.max(np.stack([f[3] for f in out]), axis=0)
        empty = np.flatnonzero(longest == 0)
        if len(empty):
            raise ValueError("%s: sequence %d of the chunk has no sample in any stream" % (where, int(empty[0])))
        if int(longest.max()) >= 2 ** 32:
            raise ValueError("%s: a sequence has %d samples; at most %d" % (where, int(longest.max()), 2 ** 32 - 1))
        return out

    def lengths(self, chunk_id, dtype_name):
        """The scheduling length (longest stream) of each sequence of chunk ``chunk_id``, int64."""
        streams = self.chunk(chunk_id, dtype_name)
        return np.ascontiguousarray(np.max(np.stack([s[3] for s in streams]), axis=0), dtype=np.int64)


def _is_sparse_matrix(value):
    try:
        import scipy.sparse
    except ImportError:  # pragma: no cover - scipy is a dependency of sparse use only
        return False
    return scipy.sparse.issparse(value)


def _flatten(value, sparse, shape, dim, dtype, where):
    """One stream's data of a chunk as (values, indices, nnz_counts, lengths)."""
    if isinstance(value, (list, tuple)):  # sequence mode
        parts = [_one_sequence(v, sparse, shape, dim, dtype, "%s, sequence %d" % (where, i))
                 for i, v in enumerate(value)]
        lengths = np.array([p[2] for p in parts], dtype=np.int64)
        if sparse:
            values = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype)
            indices = np.concatenate([p[1][0] for p in parts]) if parts else np.zeros(0, np.int32)
            nnz = np.concatenate([p[1][1] for p in parts]) if parts else np.zeros(0, np.uint32)
            return (np.ascontiguousarray(values, dtype), np.ascontiguousarray(indices, np.int32),
                    np.ascontiguousarray(nnz, np.uint32), lengths)
        values = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype)
        return np.ascontiguousarray(values, dtype), None, None, lengths
    # sample mode: every row is a sequence of one sample
    values, sparse_parts, samples = _one_sequence(value, sparse, shape, dim, dtype, where)
    lengths = np.ones(samples, dtype=np.int64)
    if sparse:
        return values, sparse_parts[0], sparse_parts[1], lengths
    return values, None, None, lengths


def _one_sequence(value, sparse, shape, dim, dtype, where):
    """(flat values, (indices, nnz) or None, samples) of an array [samples, *shape] or csr_matrix [samples, dim]."""
    if sparse:
        if not _is_sparse_matrix(value):
            raise TypeError("%s: a sparse stream needs a scipy.sparse.csr_matrix, not %s" % (where, type(value).__name__))
        matrix = value.tocsr()
        if matrix.shape[1] != dim:
            raise ValueError("%s: the matrix has %d columns; the stream's dimension is %d" % (where, matrix.shape[1], dim))
        if np.iscomplexobj(matrix.data):  # casting would drop the imaginary parts
            raise TypeError("%s: the values must be real numbers, not %s" % (where, matrix.dtype))
        matrix.sum_duplicates()
        indptr = np.asarray(matrix.indptr, dtype=np.int64)
        nnz = np.diff(indptr).astype(np.uint32)
        values = np.ascontiguousarray(matrix.data, dtype=dtype)
        indices = np.ascontiguousarray(matrix.indices, dtype=np.int32)
        return values, (indices, nnz), matrix.shape[0]
    if _is_sparse_matrix(value):
        raise TypeError("%s: a dense stream needs a NumPy array, not a sparse matrix" % where)
    array = np.asarray(value)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise TypeError("%s: the values must be numbers, not %s" % (where, array.dtype))
    if np.iscomplexobj(array):  # casting would drop the imaginary parts
        raise TypeError("%s: the values must be real numbers, not %s" % (where, array.dtype))
    if array.ndim == len(shape) and tuple(array.shape) == tuple(shape):
        raise ValueError("%s: the array has the shape of one sample %r; give [samples, *shape]" % (where, array.shape))
    if array.ndim == 0 or tuple(array.shape[1:]) != tuple(shape):
        raise ValueError("%s: the array has shape %r; the stream's samples have shape %r, so it must be "
                         "[samples, %s]" % (where, array.shape, tuple(shape), ", ".join(map(str, shape))))
    return np.ascontiguousarray(array, dtype=dtype).reshape(-1), None, array.shape[0]


def user_deserializer_definition(user):
    """The cntkio deserializer definition (a _Deserializer) of a UserDeserializer instance."""
    from ._deserializers import _Deserializer

    if not isinstance(user, UserDeserializer):
        raise TypeError("not a UserDeserializer: %r" % (user,))
    adapter = _Adapter(user)
    spec = _core._user_deserializer_spec(adapter)
    return _Deserializer([spec], {}, (_definition_from_pickle, (user,), {}))


def _definition_from_pickle(user):
    return user_deserializer_definition(user)
