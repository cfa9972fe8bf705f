"""cntk.io's sources written in Python: UserMinibatchSource (a base class) and MinibatchSourceFromData."""

import numpy as np

from . import typing as _typing
from ._deserializers import Record, _count
from ._source import (FULL_DATA_SWEEP, INFINITELY_REPEAT, MinibatchData, MinibatchDict, StreamInformation,
                      _find_stream)
from ._value import Value, _is_csr, _warn_device


class UserMinibatchSource:
    """Base class of a minibatch source written in Python, as cntk.io.UserMinibatchSource.

    A subclass implements ``stream_infos()`` (a list of StreamInformation) and ``next_minibatch(num_samples,
    number_of_workers, worker_rank, device=None)`` (a dict StreamInformation → MinibatchData, empty at the end),
    and for checkpoints ``get_checkpoint_state()`` (a dict with string keys) and
    ``restore_from_checkpoint(state)``. ``__init__`` must run after what ``stream_infos()`` needs is set: it
    builds ``streams`` from it.
    """

    def __init__(self):
        infos = list(self.stream_infos())
        for info in infos:
            if not isinstance(info, StreamInformation):
                raise TypeError("%s.stream_infos() must return StreamInformation objects, got %r"
                                % (type(self).__name__, info))
        self._user_infos = infos
        self.streams = Record((info.m_name, info) for info in infos)

    def stream_infos(self):
        """The streams of this source (to be implemented): a list of StreamInformation."""
        raise NotImplementedError("%s must implement stream_infos()" % type(self).__name__)

    def stream_info(self, name):
        """The StreamInformation of the stream called ``name`` (ValueError if there is none or several)."""
        return _find_stream(self._user_infos, name)

    def __getitem__(self, name):
        return self.stream_info(name)

    def next_minibatch(self, num_samples, number_of_workers, worker_rank, device=None):
        """About ``num_samples`` samples of worker ``worker_rank``'s share (to be implemented): a dict
        StreamInformation → MinibatchData, empty when the source has no more data."""
        raise NotImplementedError("%s must implement next_minibatch()" % type(self).__name__)

    def get_checkpoint_state(self):
        """The source's position as a dict with string keys; {} (nothing to restore) unless overridden."""
        return {}

    def restore_from_checkpoint(self, state):
        """Continues from get_checkpoint_state()'s dict; a non-empty state needs an override
        (NotImplementedError, as in cntk.io)."""
        if state:
            raise NotImplementedError("%s: to restore a checkpoint, implement restore_from_checkpoint(state)"
                                      % type(self).__name__)

    @property
    def current_position(self):
        """The checkpoint state (get) / restore_from_checkpoint (set)."""
        return self.get_checkpoint_state()

    @current_position.setter
    def current_position(self, position):
        self.restore_from_checkpoint(position)

    def is_infinite(self):
        """Whether the source sets no limit on the samples it delivers; False unless overridden (as cntk.io)."""
        return False


def _length(value):
    return value.shape[0] if _is_csr(value) else len(value)


class MinibatchSourceFromData(UserMinibatchSource):
    """In-memory data as a minibatch source (cntk.io.MinibatchSourceFromData): read in order, without
    randomization, without copying the data (pass a copy if you change it while reading).

    ``data_streams`` maps stream names to data: a NumPy array ``[samples, *shape]``, a
    scipy.sparse.csr_matrix ``[samples, dim]`` or a cntkio.Value of either; or ``(data, type)`` where the type
    comes from ``cntkio.typing`` (cntk.layers.typing's counterpart): ``(list of per-sequence arrays or csr
    matrices, Sequence[tensor])`` gives sequences. All streams have the same number of items. ``max_samples``
    (default INFINITELY_REPEAT: start over at the end) limits the samples read; a sequence counts with the
    the length of its longest stream; FULL_DATA_SWEEP reads the data once.

    Example:
     >>> import cntkio, scipy.sparse
     >>> N = 5
     >>> X = np.arange(3*N).reshape(N,3).astype(np.float32) # 5 rows of 3 values
     >>> s = cntkio.MinibatchSourceFromData(dict(x=X), max_samples=len(X))
     >>> mb = s.next_minibatch(3) # get a minibatch of 3
     >>> d = mb[s.streams['x']]
     >>> d.data.asarray()
     array([[0., 1., 2.],
            [3., 4., 5.],
            [6., 7., 8.]], dtype=float32)
     >>> mb = s.next_minibatch(3) # note: only 2 left
     >>> d = mb[s.streams['x']]
     >>> d.data.asarray()
     array([[ 9., 10., 11.],
            [12., 13., 14.]], dtype=float32)
     >>> mb = s.next_minibatch(3)
     >>> mb
     {}

     >>> # example of a sparse input
     >>> Y = np.array([i % 3 == 0 for i in range(N)], np.float32)
     >>> Y = scipy.sparse.csr_matrix((np.ones(N,np.float32), (range(N), Y)), shape=(N, 2))
     >>> s = cntkio.MinibatchSourceFromData(dict(x=X, y=Y)) # also not setting max_samples -> will repeat
     >>> mb = s.next_minibatch(3)
     >>> d = mb[s.streams['y']]
     >>> d.data.asarray().todense()
     matrix([[0., 1.],
             [1., 0.],
             [1., 0.]], dtype=float32)
     >>> mb = s.next_minibatch(3) # at end only 2 sequences
     >>> d = mb[s.streams['y']]
     >>> d.data.asarray().todense()
     matrix([[0., 1.],
             [1., 0.]], dtype=float32)

     >>> # if we do not set max_samples, then it will start over once the end is hit
     >>> mb = s.next_minibatch(3)
     >>> d = mb[s.streams['y']]
     >>> d.data.asarray().todense()
     matrix([[0., 1.],
             [1., 0.],
             [1., 0.]], dtype=float32)

     >>> # values can also be cntkio.Value objects
     >>> s = cntkio.MinibatchSourceFromData(dict(x=cntkio.Value(X), y=cntkio.Value(Y)))
     >>> mb = s.next_minibatch(3)
     >>> d = mb[s.streams['y']]
     >>> d.data.asarray().todense()
     matrix([[0., 1.],
             [1., 0.],
             [1., 0.]], dtype=float32)

     >>> # data can be sequences
     >>> import cntkio.typing
     >>> XX = [np.array([1,3,2], np.float32),np.array([4,1], np.float32)]  # 2 sequences
     >>> YY = [scipy.sparse.csr_matrix(np.array([[0,1],[1,0],[1,0]], np.float32)),
     ...       scipy.sparse.csr_matrix(np.array([[1,0],[1,0]], np.float32))]
     >>> s = cntkio.MinibatchSourceFromData(dict(xx=(XX, cntkio.typing.Sequence[cntkio.typing.tensor]),
     ...                                         yy=(YY, cntkio.typing.Sequence[cntkio.typing.tensor])))
     >>> mb = s.next_minibatch(3)
     >>> mb[s.streams['xx']].data.asarray()
     array([[1., 3., 2.]], dtype=float32)
     >>> mb[s.streams['yy']].data.shape # getting sequences out is messy, so we only show the shape
     (1, 3, 2)
    """

    def __init__(self, data_streams, max_samples=INFINITELY_REPEAT):
        if not data_streams:
            raise ValueError("MinibatchSourceFromData: at least one stream must be given, as name=data or "
                             "name=(data, type)")
        self._data = {}  # name -> ndarray, csr_matrix or list of per-sequence ones
        self._is_sequence = {}
        self._infos = []
        self._num_items = None
        for stream_id, (name, arg) in enumerate(data_streams.items()):
            what = "MinibatchSourceFromData: stream '%s'" % name
            if isinstance(arg, tuple):
                if len(arg) != 2:
                    raise ValueError("%s: give data or (data, type)" % what)
                value, kind = arg
                if not isinstance(kind, _typing._Type):
                    raise ValueError("%s: the type must be one of cntkio.typing (e.g. Tensor[13] or "
                                     "Sequence[tensor]), got %r" % (what, kind))
            else:
                value, kind = arg, _typing.tensor
            value = self._plain(value, kind.is_sequence, what)
            items = _length(value)
            if self._num_items is None:
                if items == 0:
                    raise ValueError("%s: data is empty" % what)
                self._num_items = items
            elif items != self._num_items:
                raise TypeError("MinibatchSourceFromData: all data items must have the same first dimension "
                                "(stream '%s' has %d, the first stream %d)" % (name, items, self._num_items))
            first = value[0] if kind.is_sequence else value
            sparse = _is_csr(first)
            if kind.is_sparse and not sparse:
                raise ValueError("%s: the type is sparse, the data is not a scipy.sparse.csr_matrix" % what)
            shape = first.shape[1:]
            if kind.shape is not None and tuple(kind.shape) != tuple(shape):
                raise ValueError("%s: the type's shape %s does not match the data's sample shape %s"
                                 % (what, tuple(kind.shape), tuple(shape)))
            self._data[name] = value
            self._is_sequence[name] = kind.is_sequence
            self._infos.append(StreamInformation(name, stream_id, "sparse" if sparse else "dense", first.dtype,
                                                 shape))
        self._one_sweep = max_samples == FULL_DATA_SWEEP  # ends when the cursor wraps around
        self._max_samples = _count(max_samples, "max_samples", allow_zero=False)
        self._cursor = 0  # next item to read
        self._total_num_samples = 0  # samples delivered; reading stops at max_samples
        super().__init__()

    @staticmethod
    def _plain(value, is_sequence, what):
        """The stream's data as an ndarray, csr_matrix or list of those (a cntkio.Value without sequence axis
        becomes its array)."""
        if isinstance(value, Value):
            if value.mask is not None:
                raise TypeError("%s: a Value of sequences is not supported; give the list of sequences with "
                                "Sequence[tensor]" % what)
            value = value.asarray()
        if is_sequence:
            if not isinstance(value, list) or not value:
                raise TypeError("%s: sequence data must be a non-empty list of NumPy arrays or "
                                "scipy.sparse.csr_matrix, one per sequence" % what)
            items = value
        else:
            if isinstance(value, list):
                raise TypeError("%s: a list is sequence data: give it as (data, cntkio.typing.Sequence[tensor])"
                                % what)
            items = [value]
        for item in items:
            if not isinstance(item, np.ndarray) and not _is_csr(item):
                raise TypeError("%s: data must be a numpy.ndarray or scipy.sparse.csr_matrix, or a list of those, "
                                "got %s" % (what, type(item).__name__))
            if isinstance(item, np.ndarray) and item.ndim == 0:
                raise ValueError("%s: data needs a first axis (samples or steps)" % what)
        if is_sequence and len({_is_csr(v) for v in value}) != 1:
            raise TypeError("%s: the sequences must be all dense or all scipy.sparse.csr_matrix" % what)
        return value

    def stream_infos(self):
        return list(self._infos)

    def next_minibatch(self, num_samples, number_of_workers=1, worker_rank=0, device=None):
        """The next items up to ``num_samples`` samples (at least one item, even if it has more), worker
        ``worker_rank``'s share of them (every ``number_of_workers``-th item); {} once max_samples is reached."""
        _warn_device(device, "MinibatchSourceFromData.next_minibatch")
        num_samples = _count(num_samples, "num_samples", allow_zero=False)
        workers = _count(number_of_workers, "number_of_workers", allow_zero=False)
        rank = _count(worker_rank, "worker_rank")
        if rank >= workers:
            raise ValueError("worker_rank %d is not below number_of_workers %d" % (rank, workers))
        if self._total_num_samples >= self._max_samples or (self._one_sweep and self._total_num_samples
                                                               and self._cursor == 0):
            return MinibatchDict()
        begin = end = self._cursor
        counts = dict.fromkeys(self._data, 0)  # samples of each stream in the items taken
        while end < self._num_items:
            more = {name: counts[name] + (_length(value[end]) if self._is_sequence[name] else 1)
                    for name, value in self._data.items()}
            most = max(more.values())
            # At least one item even if it is longer than num_samples (cntk.io meant to, but never took it).
            if (end > begin and most > num_samples) or self._total_num_samples + most > self._max_samples:
                break
            counts = more
            end += 1
        if end == begin:  # the next item would cross max_samples: the end
            return MinibatchDict()
        self._total_num_samples += max(counts.values())
        at_end = end == self._num_items
        sweep_end = at_end or self._total_num_samples >= self._max_samples
        result = MinibatchDict()
        for info in self._infos:
            data = self._data[info.name]
            share = data[begin + rank:end:workers]  # this worker's items: every workers-th of the minibatch's
            if workers != 1 and isinstance(share, np.ndarray):
                share = share.copy()  # not strided
            if self._is_sequence[info.name]:
                value = Value(share) if share else Value._empty(info.shape, info.is_sparse, info.dtype)
                samples = sum(_length(s) for s in share)
            else:
                value = Value(share)
                samples = _length(share)
            result[info] = MinibatchData(value, _length(share), samples, sweep_end)
        self._cursor = 0 if at_end else end
        return result

    def get_checkpoint_state(self):
        """The position: ``{'cursor': next item, 'total_num_samples': samples delivered}`` (as cntk.io)."""
        return dict(cursor=self._cursor, total_num_samples=self._total_num_samples)

    def restore_from_checkpoint(self, checkpoint):
        """Continues from a dict of get_checkpoint_state()."""
        cursor = _count(checkpoint["cursor"], "checkpoint cursor")
        if cursor >= self._num_items:
            raise ValueError("checkpoint cursor %d is not below the %d items of the data" % (cursor, self._num_items))
        self._cursor = cursor
        self._total_num_samples = _count(checkpoint["total_num_samples"], "checkpoint total_num_samples")
