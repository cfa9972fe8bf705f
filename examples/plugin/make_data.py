#!/usr/bin/env python3
"""Writes the example's data: data/s00.npy ... data/s11.npy, one sequence each.

Sequence i has 1 + (5 i mod 7) samples of 3 values; value d of sample t is 100 i + 10 t + d (exact in
float32), so a test can compute what a reader must deliver. Even i are float32 ('<f4'), odd i float64
('<f8'); the files use .npy format 1.0, except s03 and s07 (2.0) and s11 (3.0). Run it from this folder:
  python3 make_data.py
"""
import os

import numpy as np
from numpy.lib import format as npy_format

FILES = 12
DIM = 3


def sequence(i):
    samples = 1 + (5 * i) % 7
    t = np.arange(samples).reshape(-1, 1)
    d = np.arange(DIM).reshape(1, -1)
    return (100 * i + 10 * t + d).astype(np.float32 if i % 2 == 0 else np.float64)


def main():
    os.makedirs("data", exist_ok=True)
    for i in range(FILES):
        version = {3: (2, 0), 7: (2, 0), 11: (3, 0)}.get(i, (1, 0))
        with open(os.path.join("data", "s%02d.npy" % i), "wb") as f:
            npy_format.write_array(f, sequence(i), version=version)


if __name__ == "__main__":
    main()
