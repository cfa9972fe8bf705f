#!/usr/bin/python3
"""Trains a tiny PyTorch classifier on examples/sequences.ctf read by cntkio (the data of example.cntk).

300 sequences of 1..8 steps: a dense 3-value `features` stream per step and a sparse one-hot `label` (20
classes) on the first step. The model reads the masked, zero-padded feature sequence and predicts the label.
The labels of this sample data are random, so the falling loss shows the model fitting (memorizing) the
training data fed through cntkio.MinibatchSource -> cntkio.torch.MinibatchDataset -> torch DataLoader.

    /usr/bin/python3 examples/train_pytorch.py [--epochs 8] [--workers 2]
"""

import argparse
import functools
import os
import sys

import torch
from torch.utils.data import DataLoader

import cntkio
import cntkio.torch

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_STEPS = 8  # longest sequence in sequences.ctf
CLASSES = 20


def make_source(path, seed):
    """A new reader; every DataLoader worker calls this once (it must be picklable: functools.partial)."""
    streams = cntkio.StreamDefs(
        features=cntkio.StreamDef(field="features", shape=3),
        label=cntkio.StreamDef(field="label", shape=CLASSES, is_sparse=True))
    return cntkio.MinibatchSource(cntkio.CTFDeserializer(path, streams), randomization_window_in_chunks=128,
                                  randomization_seed=seed)


class Classifier(torch.nn.Module):
    def __init__(self, hidden=256):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(MAX_STEPS * 3 + MAX_STEPS, hidden), torch.nn.ReLU(),
                                       torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                                       torch.nn.Linear(hidden, CLASSES))

    def forward(self, features, mask):
        # features [sequences, steps, 3] zero padded; mask [sequences, steps]; pad both to MAX_STEPS.
        n, steps = mask.shape
        x = torch.zeros(n, MAX_STEPS, 3)
        x[:, :steps] = features
        m = torch.zeros(n, MAX_STEPS)
        m[:, :steps] = (mask > 0).float()
        return self.net(torch.cat([x.reshape(n, -1), m], dim=1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(HERE, "sequences.ctf"))
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    parser.add_argument("--minibatch-size", type=int, default=128, help="samples (steps) per minibatch")
    args = parser.parse_args(argv)

    torch.manual_seed(0)
    dataset = cntkio.torch.MinibatchDataset(functools.partial(make_source, args.data, 7), args.minibatch_size)
    loader = DataLoader(dataset, batch_size=None, num_workers=args.workers)
    model = Classifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for epoch in range(args.epochs):
        dataset.set_epoch(epoch)  # new worker processes every epoch: tell them which one
        total, sequences = 0.0, 0
        for batch in loader:
            labels = batch["label"][:, 0, 0]  # one-hot label on the first step: its class index
            logits = model(batch["features"], batch["features_mask"])
            loss = torch.nn.functional.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(labels)
            sequences += len(labels)
        losses.append(total / sequences)
        print("epoch %d: %d sequences, mean loss %.4f" % (epoch + 1, sequences, losses[-1]), flush=True)
    falling = losses[-1] < losses[0]
    print("loss %s: %.4f -> %.4f" % ("fell" if falling else "did NOT fall", losses[0], losses[-1]))
    return 0 if falling else 1


if __name__ == "__main__":
    sys.exit(main())
