"""The few types of ``cntk.layers.typing`` that ``MinibatchSourceFromData`` takes: ``(data, type)`` says
whether the data is sequences and, optionally, its sample shape.

* ``tensor``: samples of any shape (one sample per item of the data);
* ``Tensor[3]``, ``Tensor[2, 3]``: samples of that shape; ``SparseTensor[10]``: sparse samples;
* ``Sequence[tensor]``, ``Sequence[Tensor[3]]``, ``Sequence[SparseTensor[10]]``: the data is a list of sequences
  (each a NumPy array or scipy.sparse.csr_matrix whose first axis is the sequence's steps).

So ``MinibatchSourceFromData(dict(x=(X, cntkio.typing.Sequence[cntkio.typing.tensor])))`` reads as cntk.io's
``(X, cntk.layers.typing.Sequence[cntk.layers.typing.tensor])``.
"""

__all__ = ["Sequence", "SparseTensor", "Tensor", "tensor"]


class _Type:
    """A stream's type: ``shape`` (None: taken from the data), ``is_sparse`` (None: taken from the data),
    ``is_sequence``."""

    __slots__ = ("shape", "is_sparse", "is_sequence")

    def __init__(self, shape=None, is_sparse=None, is_sequence=False):
        self.shape = shape
        self.is_sparse = is_sparse
        self.is_sequence = is_sequence

    def __repr__(self):
        text = "%s[%s]" % ("SparseTensor" if self.is_sparse else "Tensor",
                           "..." if self.shape is None else ", ".join(str(d) for d in self.shape))
        if self.shape is None and not self.is_sparse:
            text = "tensor"
        return "Sequence[%s]" % text if self.is_sequence else text


def _shape(dims):
    dims = dims if isinstance(dims, tuple) else (dims,)
    if any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in dims):
        raise ValueError("a tensor's shape must be non-negative integers, got %r" % (dims,))
    return dims


class _TensorMaker:
    def __init__(self, is_sparse):
        self._sparse = is_sparse

    def __getitem__(self, dims):
        return _Type(_shape(dims), self._sparse)

    def __repr__(self):
        return "SparseTensor" if self._sparse else "Tensor"


class _SequenceMaker:
    def __getitem__(self, item):
        if not isinstance(item, _Type) or item.is_sequence:
            raise TypeError("Sequence[...] takes a tensor type (tensor, Tensor[...] or SparseTensor[...]), got %r"
                            % (item,))
        return _Type(item.shape, item.is_sparse, True)

    def __repr__(self):
        return "Sequence"


Tensor = _TensorMaker(False)
SparseTensor = _TensorMaker(True)
Sequence = _SequenceMaker()
tensor = _Type()
