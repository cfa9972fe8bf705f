"""cntkio.Value (cntk.Value's counterpart) and MinibatchData as cntk.io 2.7 made them."""

import numpy as np
import pytest
import scipy.sparse

import cntkio
from conftest import ctf_source, write_ctf


def test_a_readers_minibatch_data_is_a_value(tmp_path):
    source = ctf_source(write_ctf(tmp_path / "d.ctf", [1, 2, 3]), randomize=False)
    mb = source.next_minibatch(6)
    f, l = mb[source.streams.features], mb[source.streams.labels]
    value = f.data
    assert isinstance(value, cntkio.Value) and value.data is value
    assert value.asarray() is f.asarray() and value.data.asarray().shape == (3, 3, 2) == value.shape == f.shape
    assert np.array_equal(np.asarray(value), f.asarray()) and np.array_equal(np.asarray(f), f.asarray())
    assert value[2, 2].tolist() == [2, 2] and len(value) == 3 and not value.is_sparse
    assert value.mask.tolist() == [[2, 0, 0], [2, 1, 0], [2, 1, 1]] and value.masked_count() == 3
    assert [s.tolist() for s in value.as_sequences()] == [s.tolist() for s in f.as_sequences()]
    assert (f.number_of_sequences, f.number_of_samples, f.sweep_end) == (3, 6, f.end_of_sweep)
    assert l.data.is_sparse and l.data.shape == (3, 1, 5) and l.data.asarray().shape == (3, 5)  # one label each
    with pytest.raises(TypeError, match="sparse"):
        np.asarray(l.data)


def test_erase_releases_the_data():
    value = cntkio.Value(np.ones((2, 3), np.float32))
    value.erase()
    with pytest.raises(ValueError, match="erased"):
        value.asarray()


def test_value_of_an_array_has_no_sequence_axis():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    value = cntkio.Value(x)
    assert value.asarray() is x and value.shape == (3, 2) and value.mask is None and value.masked_count() == 0
    assert [s.tolist() for s in value.as_sequences()] == [[0, 1], [2, 3], [4, 5]]
    assert value.dtype == np.float32 and len(value) == 3
    assert cntkio.Value(np.arange(3)).dtype == np.float32  # integers become float32, as in CNTK


def test_value_of_a_csr_matrix_is_one_row_per_sample():
    y = scipy.sparse.csr_matrix(np.array([[0, 1], [1, 0], [1, 0]], np.float32))
    value = cntkio.Value(y)
    assert value.is_sparse and value.shape == (3, 2) and value.asarray().toarray().tolist() == y.toarray().tolist()
    assert [s.toarray().tolist() for s in value.as_sequences()] == [[[0, 1]], [[1, 0]], [[1, 0]]]


def test_value_of_sequences_is_padded_with_a_mask():
    value = cntkio.Value([np.array([1, 3, 2], np.float32), np.array([4, 1], np.float32)])
    assert value.shape == (2, 3) and value.asarray().tolist() == [[1, 3, 2], [4, 1, 0]]
    assert value.mask.tolist() == [[2, 1, 1], [2, 1, 0]] and value.masked_count() == 1
    assert [s.tolist() for s in value.as_sequences()] == [[1, 3, 2], [4, 1]]
    assert value.lengths.tolist() == [3, 2] and value.offsets.tolist() == [0, 3, 5]
    continued = cntkio.Value([np.ones((2, 4)), np.ones((1, 4))], seq_starts=[True, False])
    assert continued.mask.tolist() == [[2, 1], [1, 0]] and continued.shape == (2, 2, 4)
    assert continued.dtype == np.float64


def test_value_of_sparse_sequences_stacks_their_rows():
    seqs = [scipy.sparse.csr_matrix(np.array([[0, 1], [1, 0], [1, 0]], np.float32)),
            scipy.sparse.csr_matrix(np.array([[1, 0], [1, 0]], np.float32))]
    value = cntkio.Value(seqs)
    assert value.shape == (2, 3, 2) and value.asarray().shape == (5, 2) and value.offsets.tolist() == [0, 3, 5]
    assert [s.toarray().tolist() for s in value.as_sequences()] == [s.toarray().tolist() for s in seqs]


@pytest.mark.parametrize("batch, error", [
    ("text", TypeError), (np.float32(1), TypeError), (np.array(1.0), ValueError), ([], ValueError),
    ([np.ones((2, 3)), np.ones((2, 4))], ValueError), ([np.ones((2, 2)), scipy.sparse.csr_matrix(np.ones((1, 2)))],
                                                       ValueError),
    (np.array(["a"]), ValueError),
])
def test_bad_batches_are_errors(batch, error):
    with pytest.raises(error):
        cntkio.Value(batch)


def test_seq_starts_must_match_the_sequences():
    with pytest.raises(ValueError):
        cntkio.Value([np.ones((2, 2))], seq_starts=[True, False])
    with pytest.raises(ValueError):
        cntkio.Value(np.ones((2, 2)), seq_starts=[True, False])


def test_create_checks_the_sample_shape():
    class Input:
        shape = (2,)

    assert cntkio.Value.create(Input(), [np.ones((3, 2))]).shape == (1, 3, 2)
    with pytest.raises(ValueError, match="shape"):
        cntkio.Value.create(Input(), [np.ones((3, 4))])


def test_create_read_only():
    value = cntkio.Value.create(None, [np.ones((2, 2))], read_only=True)
    assert value.is_read_only and not value.asarray().flags.writeable
    assert not cntkio.Value(np.ones((1, 1))).is_read_only


def test_a_device_is_ignored_with_a_warning():
    with pytest.warns(cntkio.DeviceIgnoredWarning, match="device"):
        cntkio.Value.create(None, np.ones((1, 1)), device="gpu:0")


def test_minibatch_data_made_by_a_user_source():
    value = cntkio.Value([np.ones((2, 3), np.float32)])
    data = cntkio.MinibatchData(value, 1, 2, True)
    assert data.data is value and data.asarray() is value.asarray() and data.mask is value.mask
    assert (data.num_sequences, data.number_of_sequences, data.num_samples, data.number_of_samples) == (1, 1, 2, 2)
    assert data.end_of_sweep and data.sweep_end and len(data) == 1 and data.shape == (1, 2, 3)
    assert data.keys is None and data.layout is None and not data.zero_copy and not data.is_sparse
    assert cntkio.MinibatchData(np.zeros((4, 2)), 4, 4, False).data.shape == (4, 2)  # an array becomes a Value
    with pytest.raises(ValueError):
        cntkio.MinibatchData(value, -1, 2, False)


def test_one_hot_of_a_flat_list_names_what_it_needs():
    # CNTK: ValueError('input must be a list of list of integers'); not a TypeError from deep inside
    with pytest.raises(ValueError, match="list of list of integers"):
        cntkio.Value.one_hot([1, 2], 4)


class _Var:
    def __init__(self, shape):
        self.shape = shape


def test_create_reads_sequences_as_cntk_for_the_sample_shape():
    # CNTK's Value::Create: a sequence with the sample's own shape is one sample; for a sample shape (1,) a
    # 1-d array of n values is n samples; with seq_starts an array is a list of its rows (cntk/core.py)
    t = np.arange(5, dtype=np.float32)
    v = cntkio.Value.create(_Var((5,)), [t, t])
    assert v.shape == (2, 1, 5) and [s.shape for s in v.as_sequences()] == [(1, 5), (1, 5)]
    v = cntkio.Value.create(_Var((1,)), [np.array([1, 2, 3], np.float32), np.array([4, 5], np.float32)])
    assert v.shape == (2, 3, 1) and v.as_sequences()[1].ravel().tolist() == [4, 5]
    v = cntkio.Value.create(_Var((5,)), np.stack([t, t]), seq_starts=[True, False])
    assert v.shape == (2, 1, 5) and v.mask.tolist() == [[2], [1]]
    with pytest.raises(ValueError, match="the samples have shape"):
        cntkio.Value.create(_Var((4,)), [t, t])
