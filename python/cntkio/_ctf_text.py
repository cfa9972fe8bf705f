"""cntk.io's sequence_to_cntk_text_format: sequences in memory as lines of the CNTK text format (CTF)."""

import numpy as np


def _is_tensor(data):
    """Whether ``data`` is dense as cntk.io judged it: a NumPy array, or nested lists whose innermost items are
    numbers. A list holding NumPy arrays or dicts is not (as in cntk.io)."""
    if isinstance(data, np.ndarray):
        return True
    if not isinstance(data, list):
        return False
    while len(data) > 0:
        try:
            data[0][0]
        except Exception:  # data[0] is not indexable: the innermost level; dense when it is a number
            try:
                data[0] + 0
                return True
            except Exception:
                return False
        if not isinstance(data[0], list):
            return False
        data = data[0]
    return True


def _dense_text(sample):
    return " ".join(np.asarray(sample).ravel(order="C").astype(str))


def _sparse_text(sample):
    return " ".join("%s:%s" % (index, value) for index, value in sorted(sample.items()))


def sequence_to_cntk_text_format(seq_idx, alias_tensor_map):
    """The CTF lines (joined by newlines, no final one) of sequence ``seq_idx``.

    ``alias_tensor_map`` maps a stream's alias in the file to its samples: a dense tensor (a NumPy array or nested
    lists of numbers, first axis = samples; each sample is written flattened in C order) or, for a sparse stream,
    a list of dicts ``{index: value}`` (one dict per sample). Line t holds sample t of every stream that has one,
    aliases sorted: ``"<seq_idx>\\t|a 1 2 |b 3:1"``; a stream shorter than the longest ends early. An empty
    string when every stream is empty; ValueError for a stream that is neither dense nor a list of dicts.
    """
    if not alias_tensor_map:
        raise ValueError("sequence_to_cntk_text_format: alias_tensor_map holds no stream")
    length = max(len(tensor) for tensor in alias_tensor_map.values())
    streams = sorted(alias_tensor_map.items(), key=lambda item: item[0])
    lines = []
    for t in range(length):
        fields = []
        for alias, tensor in streams:
            if t >= len(tensor):
                continue
            if _is_tensor(tensor):
                text = _dense_text(tensor[t] if isinstance(tensor, np.ndarray) else np.asarray(tensor)[t])
            elif isinstance(tensor, list) and isinstance(tensor[0], dict):
                text = _sparse_text(tensor[t])
            else:
                raise ValueError("sequence_to_cntk_text_format: stream %r must be dense (a NumPy array or nested "
                                 "lists of numbers) or sparse (a list of dicts), got %s" % (alias, type(tensor)))
            fields.append("%s %s" % (alias, text))
        lines.append("%i\t|" % seq_idx + " |".join(fields))
    return "\n".join(lines)
