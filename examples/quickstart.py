#!/usr/bin/python3
"""Reads examples/sequences.ctf with cntkio's cntk.io-style API and prints what each minibatch holds.

    PYTHONPATH=build/python /usr/bin/python3 examples/quickstart.py

The file has 300 sequences of 1 to 8 steps: a dense 3-value `features` sample on every step and a sparse
one-hot `label` (20 classes) on the first step of each sequence. docs/guide.md explains every line.
"""

import os

import cntkio as io

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sequences.ctf")

# One deserializer: stream name -> StreamDef(field = the name after '|' in the file, shape = dimension).
streams = io.StreamDefs(
    features=io.StreamDef(field="features", shape=3),
    labels=io.StreamDef(field="label", shape=20, is_sparse=True),
)
source = io.MinibatchSource(io.CTFDeserializer(DATA, streams), randomize=False, max_sweeps=1)

features = source.streams.features
labels = source.streams.labels
print("streams:", source.stream_infos())

total_sequences = total_samples = 0
minibatches = 0
while True:
    mb = source.next_minibatch(256)  # about 256 samples of the features stream (the longest stream)
    if not mb:  # an empty dict: max_sweeps reached
        break
    x = mb[features].asarray()  # numpy float32 [sequences, longest sequence, 3], zero padded
    y = mb[labels].asarray()  # scipy.sparse.csr_matrix [label samples, 20]
    mask = mb[features].mask  # uint8 [sequences, longest sequence]: 2 = first step, 1 = step, 0 = padding
    print("minibatch %d: features %s, labels %s, %d samples, sequence lengths %s..., classes %s..." % (
        minibatches, x.shape, y.shape, int((mask > 0).sum()), mb[features].lengths[:4].tolist(),
        y.indices[:4].tolist()))
    total_sequences += mb[features].num_sequences
    total_samples += mb[features].num_samples
    minibatches += 1

print("read %d minibatches: %d sequences, %d samples" % (minibatches, total_sequences, total_samples))
print("checkpoint state:", source.get_checkpoint_state())
assert (total_sequences, total_samples) == (300, 1344)
