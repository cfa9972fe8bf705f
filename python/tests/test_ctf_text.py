"""sequence_to_cntk_text_format and _is_tensor: cntk.io 2.7's CTF text, and that cntkio reads it back."""

import numpy as np
import pytest

import cntkio
from cntkio._ctf_text import _is_tensor


def test_dense_and_sparse_streams_give_cntk_lines():
    text = cntkio.sequence_to_cntk_text_format(2, {
        "b": np.array([[1, 2], [3, 4]], np.float32),
        "a": [{0: 1.0}, {3: 2.0, 1: 5}, {2: 1}],
    })
    # aliases sorted, a tab after the index, sparse entries sorted by index, the shorter stream ends early
    assert text == "2\t|a 0:1.0 |b 1.0 2.0\n2\t|a 1:5 3:2.0 |b 3.0 4.0\n2\t|a 2:1"


def test_samples_of_several_axes_are_flattened_in_c_order():
    sample = [[1, 2, 3], [4, 5, 6]]
    assert cntkio.sequence_to_cntk_text_format(0, {"x": np.array([sample])}) == "0\t|x 1 2 3 4 5 6"
    assert cntkio.sequence_to_cntk_text_format(7, {"x": [sample, sample]}) == "7\t|x 1 2 3 4 5 6\n7\t|x 1 2 3 4 5 6"


def test_lists_of_numbers_are_dense_and_empty_streams_give_no_text():
    assert cntkio.sequence_to_cntk_text_format(1, {"x": [1, 2]}) == "1\t|x 1\n1\t|x 2"
    assert cntkio.sequence_to_cntk_text_format(1, {"x": [], "y": np.zeros((0, 3))}) == ""


@pytest.mark.parametrize("stream", ["abc", [np.array([1.0])], ({1: 2},), [["a"]], 5.0])
def test_a_stream_neither_dense_nor_a_list_of_dicts_is_a_value_error(stream):
    with pytest.raises((ValueError, TypeError)):
        cntkio.sequence_to_cntk_text_format(0, {"x": stream})


@pytest.mark.parametrize("stream", ["abc", [np.array([1.0])], ({1: 2},), [["a"]]])
def test_a_stream_of_other_items_is_a_value_error_naming_it(stream):
    with pytest.raises(ValueError, match="'x'"):
        cntkio.sequence_to_cntk_text_format(0, {"x": stream})


def test_cntk_io_s_own_cases():
    W, L = np.array([[[1, 0], [1, 0]], [[5, 6], [7, 8]]]), np.array([[[2]]])
    assert cntkio.sequence_to_cntk_text_format(0, {"W": W, "L": L}) == "0\t|L 2 |W 1 0 1 0\n0\t|W 5 6 7 8"
    assert cntkio.sequence_to_cntk_text_format(0, {"W": np.array([])}) == ""
    with pytest.raises(ValueError):
        cntkio.sequence_to_cntk_text_format(0, {"A": [object()]})


def test_no_stream_is_a_value_error():
    with pytest.raises(ValueError):
        cntkio.sequence_to_cntk_text_format(0, {})


@pytest.mark.parametrize("data, expected", [
    (np.zeros(3), True), ([1, 2], True), ([[1.5], [2]], True), ([], True), ([[]], False),
    ([np.zeros(2)], False), ([{0: 1}], False), ("ab", False), ((1, 2), False), ([["a"]], False), (3, False),
])
def test_is_tensor_as_cntk(data, expected):
    assert _is_tensor(data) is expected


def test_text_reads_back_through_the_ctf_deserializer(tmp_path):
    rng = np.random.default_rng(5)
    feature_lengths = [3, 1, 5, 2]
    label_lengths = [1, 4, 5, 1]  # shorter and longer than the features
    features = [rng.standard_normal((n, 2, 2)).astype(np.float32) for n in feature_lengths]
    labels = [[{int(k): float(rng.integers(1, 9)) for k in rng.choice(10, size=1 + t % 3, replace=False)}
               for t in range(n)] for n in label_lengths]
    path = tmp_path / "written.ctf"
    path.write_text("\n".join(cntkio.sequence_to_cntk_text_format(i, {"feat": f, "lab": l})
                              for i, (f, l) in enumerate(zip(features, labels))) + "\n")
    source = cntkio.MinibatchSource(cntkio.CTFDeserializer(str(path), cntkio.StreamDefs(
        x=cntkio.StreamDef(field="feat", shape=4), y=cntkio.StreamDef(field="lab", shape=10, is_sparse=True))),
        randomize=False, max_sweeps=1)
    mb = source.next_minibatch(1000)
    x, y = mb[source.streams.x], mb[source.streams.y]
    assert x.num_sequences == 4
    for got, want in zip(x.as_sequences(), features):
        assert np.array_equal(got, want.reshape(len(want), 4))
    for got, want in zip(y.as_sequences(), labels):
        dense = np.zeros((len(want), 10), np.float32)
        for t, sample in enumerate(want):
            for k, v in sample.items():
                dense[t, k] = v
        assert np.array_equal(got.toarray(), dense)


def test_is_tensor_is_importable_where_cntk_io_had_it():
    from cntkio.io import _is_tensor as from_io

    assert from_io is _is_tensor and cntkio._is_tensor is _is_tensor
