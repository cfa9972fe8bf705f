"""cntk.Value's counterpart: the data of one stream in one minibatch, with its sequence layout."""

import warnings

import numpy as np

_DEVICE_WARNED = set()


class DeviceIgnoredWarning(UserWarning):
    """A ``device`` other than None was given: cntkio reads into host memory only and ignores it (once per
    function)."""


def _warn_device(device, what, stacklevel=3):
    if device is not None and what not in _DEVICE_WARNED:
        _DEVICE_WARNED.add(what)
        warnings.warn("cntkio: %s: device=%r is ignored; cntkio delivers NumPy/SciPy arrays in host memory (move them "
                      "to a device yourself, e.g. with torch)" % (what, device), DeviceIgnoredWarning,
                      stacklevel=stacklevel + 1)


def _float_array(data, what):
    """``data`` as a float32/float64 ndarray (integers and bools become float32, as CNTK converts them)."""
    array = np.asarray(data)
    if array.dtype in (np.float32, np.float64):
        return array
    if array.dtype.kind in "iub":
        return array.astype(np.float32)
    raise ValueError("%s: data of type %s is not supported (float32, float64 or integers)" % (what, array.dtype))


def _is_csr(data):
    import scipy.sparse

    return isinstance(data, scipy.sparse.csr_matrix) or type(data).__name__ == "csr_array"


def _mask(lengths, starts=None):
    """CNTK's mask of sequences of ``lengths``: 2 where a sequence begins (1 where ``starts`` says it continues
    the previous minibatch's), 1 for data, 0 for padding."""
    mask = np.zeros((len(lengths), max(lengths, default=0)), np.uint8)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
        if n and (starts is None or starts[i]):
            mask[i, 0] = 2
    return mask


class Value:
    """The data of one stream in one minibatch, as cntk.Value: ``asarray()`` (a NumPy array for dense data, a
    scipy.sparse.csr_matrix with one row per sample for sparse data), ``shape``, ``mask``, ``masked_count()``,
    ``as_sequences()``, ``is_sparse``, ``dtype``; ``np.asarray(value)`` and indexing work on dense data.
    ``data`` is the value itself (CNTK's NDArrayView), so ``value.data.asarray()`` works as in CNTK.

    ``Value(batch, seq_starts=None, device=None)`` makes one from

    * a NumPy array ``[samples, *shape]``: one sample per sequence, no sequence axis (``mask`` is None);
    * a scipy.sparse.csr_matrix ``[samples, dim]``: likewise;
    * a list of per-sequence arrays ``[length, *shape]`` (or csr_matrix ``[length, dim]``): sequences, padded to
      ``[sequences, max_length, *shape]`` (sparse: rows stacked) with ``mask``; ``seq_starts[i]`` False marks
      sequence i as the continuation of one of the previous minibatch (mask 1 instead of 2 at its start);
    * another Value (shared, not copied).

    Integer data becomes float32, as in CNTK. ``device`` other than None is ignored with a DeviceIgnoredWarning.
    """

    def __init__(self, batch, seq_starts=None, device=None):
        _warn_device(device, "Value")
        self._erased = False
        self._arrays = None  # a reader's arrays (see _from_arrays)
        self._packing = "sequence"
        self._csr = None
        if isinstance(batch, Value):
            self.__dict__.update(batch.__dict__)
            return
        if isinstance(batch, (list, tuple)):
            self._init_sequences(list(batch), seq_starts)
            return
        if seq_starts:
            raise ValueError("Value: seq_starts needs the batch as a list of sequences")
        if _is_csr(batch):
            self._csr = _csr_of(batch, "Value")
            self._dense = None
            self._sample_shape = (self._csr.shape[1],)
        elif isinstance(batch, np.ndarray):
            if batch.ndim == 0:
                raise ValueError("Value: a batch needs a first (batch) axis, got a scalar")
            self._dense = _float_array(batch, "Value")
            self._sample_shape = self._dense.shape[1:]
        else:
            raise TypeError("Value: batch must be a NumPy array, a scipy.sparse.csr_matrix, a list of those (one per "
                            "sequence) or a Value, got %s" % type(batch).__name__)
        rows = self._csr.shape[0] if self._dense is None else len(self._dense)
        self._mask = None
        self._lengths = np.ones(rows, np.int64)
        self._offsets = np.arange(rows + 1, dtype=np.int64)

    def _init_sequences(self, sequences, seq_starts):
        if not sequences:
            raise ValueError("Value: the list of sequences is empty")
        if seq_starts is not None and len(seq_starts) != len(sequences):
            raise ValueError("Value: seq_starts has %d entries for %d sequences" % (len(seq_starts), len(sequences)))
        lengths = [s.shape[0] if _is_csr(s) else len(np.asarray(s)) for s in sequences]
        self._lengths = np.asarray(lengths, np.int64)
        self._offsets = np.concatenate([[0], np.cumsum(self._lengths)]).astype(np.int64)
        self._mask = _mask(lengths, seq_starts)
        if all(_is_csr(s) for s in sequences):
            import scipy.sparse

            parts = [_csr_of(s, "Value") for s in sequences]
            if len({p.shape[1] for p in parts}) != 1 or len({p.dtype for p in parts}) != 1:
                raise ValueError("Value: the sparse sequences differ in dimension or dtype")
            self._csr = scipy.sparse.vstack(parts, format="csr")
            self._dense = None
            self._sample_shape = (parts[0].shape[1],)
            return
        if any(_is_csr(s) for s in sequences):
            raise ValueError("Value: a list of sequences must be all dense or all scipy.sparse.csr_matrix")
        arrays = [_float_array(s, "Value") for s in sequences]
        if any(a.ndim == 0 for a in arrays):
            raise ValueError("Value: each sequence needs a first (sample) axis")
        shapes = {a.shape[1:] for a in arrays}
        if len(shapes) != 1:
            raise ValueError("Value: the sequences' samples differ in shape: %s" % sorted(shapes))
        self._sample_shape = shapes.pop()
        dense = np.zeros((len(arrays), max(lengths)) + self._sample_shape, np.result_type(*arrays))
        for i, a in enumerate(arrays):
            dense[i, :len(a)] = a
        self._dense = dense

    @classmethod
    def _from_arrays(cls, arrays, packing):
        """The Value of a reader's arrays (cntkio._core) of one stream, packed as ``packing`` ("sequence", "frame"
        or "truncated"). Frame mode keeps CNTK's sequence axis of length 1: ``[samples, 1, *shape]``."""
        self = cls.__new__(cls)
        self._erased = False
        self._arrays = arrays
        self._packing = packing
        self._csr = None
        self._mask = arrays["mask"]
        self._lengths = arrays["lengths"]
        self._offsets = arrays["offsets"]
        if "value" in arrays:
            value = arrays["value"]
            self._dense = value[:, None] if packing == "frame" else value
            self._sample_shape = value.shape[1:] if packing == "frame" else value.shape[2:]
        else:
            self._dense = None
            self._sample_shape = (arrays["dim"],)
        return self

    @classmethod
    def _empty(cls, sample_shape, is_sparse, dtype):
        """A Value of no sequence (a worker's share of a minibatch can be empty)."""
        self = cls.__new__(cls)
        self._erased = False
        self._arrays = None
        self._packing = "sequence"
        self._sample_shape = tuple(sample_shape)
        self._mask = np.zeros((0, 0), np.uint8)
        self._lengths = np.zeros(0, np.int64)
        self._offsets = np.zeros(1, np.int64)
        if is_sparse:
            import scipy.sparse

            self._dense, self._csr = None, scipy.sparse.csr_matrix((0,) + self._sample_shape, dtype=dtype)
        else:
            self._dense, self._csr = np.zeros((0, 0) + self._sample_shape, dtype), None
        return self

    ONE_HOT_SKIP = 2 ** 64 - 1
    """An index of Value.one_hot that stands for a sample of zeros (CNTK's Value.ONE_HOT_SKIP)."""

    @staticmethod
    def one_hot(batch, num_classes, dtype=None, device=None):
        """cntk.Value.one_hot: a sparse Value of sequences whose samples are one-hot rows of ``num_classes``
        columns. ``batch`` is a list of sequences (lists or 1-d arrays of class indices; ONE_HOT_SKIP gives a
        row of zeros); ``dtype`` float32 (default) or float64. ``num_classes`` as a tuple (samples of several
        one-hot rows) is not supported: ValueError."""
        import scipy.sparse

        _warn_device(device, "Value.one_hot")
        if not isinstance(num_classes, (int, np.integer)):
            if isinstance(num_classes, tuple) and len(num_classes) == 1:
                num_classes = num_classes[0]
            else:
                raise ValueError("Value.one_hot: cntkio supports num_classes as one number, got %r" % (num_classes,))
        dtype = np.float32 if dtype is None else dtype
        if dtype not in (np.float32, np.float64):
            raise ValueError("Value.one_hot: dtype must be float32 or float64, got %r" % (dtype,))
        if isinstance(batch, np.ndarray):
            batch = batch.tolist()
        if not isinstance(batch, (list, tuple)) or any(
                not isinstance(sequence, (list, tuple, np.ndarray)) for sequence in batch):
            raise ValueError("Value.one_hot: input must be a list of list of integers (one list per sequence), "
                             "got %r" % (batch,))
        sequences = []
        for sequence in batch:
            indices = [int(i) for i in (sequence.tolist() if isinstance(sequence, np.ndarray) else sequence)]
            if any(not 0 <= i < num_classes and i != Value.ONE_HOT_SKIP for i in indices):
                raise ValueError("Value.one_hot: an index of %s is not below num_classes %d" % (indices, num_classes))
            rows = [t for t, i in enumerate(indices) if i != Value.ONE_HOT_SKIP]
            columns = [i for i in indices if i != Value.ONE_HOT_SKIP]
            sequences.append(scipy.sparse.csr_matrix((np.ones(len(rows), dtype), (rows, columns)),
                                                     shape=(len(indices), int(num_classes))))
        return Value(sequences)

    @staticmethod
    def create(var, data, seq_starts=None, device=None, read_only=False):
        """cntk.Value.create: a Value of ``data`` (a list of per-sequence arrays or csr_matrix, or one array or
        csr_matrix of samples) for an input of sample shape ``var.shape`` (``var`` may be None, or anything with
        a ``shape``, e.g. a cntkio.typing type); ValueError when the samples have another shape. ``read_only``
        sets ``is_read_only`` (and makes a dense array that the Value made itself unwritable)."""
        _warn_device(device, "Value.create")
        expected = getattr(var, "shape", None)
        if expected is not None:
            expected = (expected,) if isinstance(expected, (int, np.integer)) else tuple(expected)
            data = Value._sequences_for_shape(data, expected, seq_starts)
        value = Value(data, seq_starts)
        if read_only:
            value._read_only = True
            if value._dense is not None and value._dense is not data:
                value._dense.flags.writeable = False
        if expected is not None:
            if expected != value._sample_shape:
                raise ValueError("Value.create: the samples have shape %s, the input %s" % (value._sample_shape,
                                                                                            expected))
        return value

    @staticmethod
    def _sequences_for_shape(data, sample_shape, seq_starts):
        """``data`` as Value.create reads it for samples of ``sample_shape``, as CNTK's did: with ``seq_starts``
        an array is a list of its rows; in a list, an array of the sample's own shape is a sequence of one
        sample, and for a sample shape (1,) a 1-d array of n values is n samples."""
        if seq_starts and isinstance(data, np.ndarray):
            data = list(np.atleast_1d(data))
        if not isinstance(data, (list, tuple)):
            return data
        out = []
        for item in data:
            if isinstance(item, (np.ndarray, list, tuple)):  # (a csr_matrix is neither)
                array = np.asarray(item)
                if array.dtype != object and array.shape == sample_shape:
                    item = array.reshape((1,) + sample_shape)
                elif array.dtype != object and sample_shape == (1,) and array.ndim == 1:
                    item = array.reshape(-1, 1)
            out.append(item)
        return out

    def _check(self):
        if self._erased:
            raise ValueError("this Value was erased (Value.erase())")

    # -- CNTK's Value

    @property
    def data(self):
        """The value itself (CNTK's NDArrayView of it): ``value.data.asarray()`` is ``value.asarray()``."""
        self._check()
        return self

    def asarray(self):
        """A NumPy array (dense) or a scipy.sparse.csr_matrix with one row per sample (sparse)."""
        self._check()
        if self._dense is not None:
            return self._dense
        if self._csr is None:
            import scipy.sparse

            a = self._arrays
            self._csr = scipy.sparse.csr_matrix((a["data"], a["indices"], a["indptr"]),
                                                shape=(len(a["indptr"]) - 1, a["dim"]), copy=False)
        return self._csr

    @property
    def is_sparse(self):
        return self._dense is None

    @property
    def dtype(self):
        self._check()
        if self._dense is not None:
            return self._dense.dtype.type
        return (self._csr.dtype if self._csr is not None else self._arrays["data"].dtype).type

    @property
    def shape(self):
        """The (padded) shape: ``[sequences, max_length, *shape]``, ``[samples, 1, *shape]`` in frame mode,
        ``[samples, *shape]`` for a Value made of one array without sequence axis; sparse values have the same
        logical shape (their array is one csr row per sample)."""
        self._check()
        if self._dense is not None:
            return self._dense.shape
        if self._mask is None:
            return self.asarray().shape
        return tuple(self._mask.shape) + self._sample_shape

    @property
    def mask(self):
        """uint8 ``[sequences, max_length]``: 2 = a sequence begins, 1 = data, 0 = padding (None for a Value
        without sequence axis)."""
        self._check()
        return self._mask

    def masked_count(self):
        """The number of padding entries (mask 0), as CNTK's Value.masked_count()."""
        self._check()
        return 0 if self._mask is None else int(np.count_nonzero(self._mask == 0))

    @property
    def lengths(self):
        """Samples of each sequence (int64)."""
        return self._lengths

    @property
    def offsets(self):
        """Row where each sequence starts in the sample-wise (sparse) matrix; n+1 entries."""
        return self._offsets

    def as_sequences(self, variable=None):
        """A list with one array per sequence, padding removed: ``[length, *shape]`` NumPy arrays, or csr_matrix
        slices for sparse data (CNTK needed ``variable`` for those; cntkio does not use it)."""
        value = self.asarray()
        if self.is_sparse:
            offsets = self._offsets
            return [value[int(offsets[i]):int(offsets[i + 1])] for i in range(len(offsets) - 1)]
        if self._mask is None:
            return list(value)  # CNTK: a Value without sequence axis is a list of its samples
        lengths = self._lengths
        if self._packing == "truncated":  # rows are slots; a sequence is the part of its slot inside this minibatch
            entries = self._arrays["layout"][2]
            return [value[int(row), max(int(tb), 0):max(int(tb), 0) + int(n)]
                    for (_, row, tb, _), n in zip(entries, lengths)]
        return [value[i, :int(lengths[i])] for i in range(len(value))]

    def erase(self):
        """Releases the data (CNTK's Value.erase()); using the value afterwards is a ValueError."""
        self._erased = True
        self._dense = self._csr = self._arrays = None

    @property
    def device(self):
        """None: cntkio's data is in host memory."""
        return None

    is_read_only = property(lambda self: getattr(self, "_read_only", False))

    def __array__(self, dtype=None, copy=None):
        if self.is_sparse:
            raise TypeError("a sparse Value is not a dense array: use asarray() (a scipy.sparse.csr_matrix) or "
                            "asarray().toarray()")
        array = self.asarray()
        if dtype is not None:
            array = array.astype(dtype, copy=False)
        return array.copy() if copy else array

    def __getitem__(self, index):
        return self.asarray()[index]

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        if self._erased:
            return "Value(erased)"
        return "Value(shape=%r, dtype=%s, %s)" % (self.shape, np.dtype(self.dtype).name,
                                                  "sparse" if self.is_sparse else "dense")


def _csr_of(matrix, what):
    import scipy.sparse

    csr = scipy.sparse.csr_matrix(matrix)
    if csr.dtype not in (np.float32, np.float64):
        if csr.dtype.kind not in "iub":
            raise ValueError("%s: sparse data of type %s is not supported" % (what, csr.dtype))
        csr = csr.astype(np.float32)
    return csr
