"""Small data sets that ship with rawdev (see DATA_LICENSE.md): the UCI optdigits set for `rawdev demo`."""
import gzip
import hashlib
from importlib import resources

import numpy as np

__all__ = ["load_digits"]

DIGITS_SHA256 = "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"


def load_digits():
    """(X float32 [1797, 64] with pixel values 0..16, y int64 [1797]) from the bundled digits.csv.gz."""
    raw = (resources.files(__name__) / "digits.csv.gz").read_bytes()
    if hashlib.sha256(raw).hexdigest() != DIGITS_SHA256:
        raise RuntimeError("rawdev/data/digits.csv.gz is corrupted (sha256 mismatch); reinstall rawdev")
    data = np.loadtxt(gzip.decompress(raw).decode().splitlines(), delimiter=",", dtype=np.float32)
    return np.ascontiguousarray(data[:, :-1]), data[:, -1].astype(np.int64)
