"""h5py (HDF5): datasets with chunking and compression written and read back."""
import hashlib
import os
import sys
import tempfile

import h5py
import numpy as np

from compat_rounds import rounds


def work(i):
    fd, path = tempfile.mkstemp(suffix=".h5")
    os.close(fd)
    try:
        data = np.arange(200000, dtype=np.float64).reshape(400, 500) * (i + 1)
        with h5py.File(path, "w") as f:
            f.create_dataset("a", data=data, chunks=(50, 50), compression="gzip")
            f["a"].attrs["round"] = i
        with h5py.File(path, "r") as f:
            back = f["a"][...]
            attr = int(f["a"].attrs["round"])
        return (hashlib.sha256(back.tobytes()).hexdigest()[:16], attr, back.shape)
    finally:
        os.unlink(path)


for r in rounds(3, work):
    print(r)
sys.stdout.flush()
