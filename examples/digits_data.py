"""scikit-learn's digits (1,797 images of 8×8 pixels, values 0-16, and their labels), read from
the file scikit-learn ships, without importing scikit-learn.

Why: ``sklearn.datasets.load_digits`` imports scikit-learn and SciPy first, which takes longer
than training the examples' small networks (1.6 s on a quiet machine, several seconds on a busy
one), and every example run is a process of its own. The file is read exactly as ``load_digits``
reads it; where it is not where scikit-learn keeps it, ``load_digits`` itself is used.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """``(images, target)``: float64 images of shape (1797, 8, 8) and int64 labels, the same
    arrays as ``sklearn.datasets.load_digits()``'s ``images`` and ``target``."""
    spec = importlib.util.find_spec("sklearn")  # finds the package without running it
    folders = spec.submodule_search_locations if spec is not None else None
    path = Path(next(iter(folders))) / "datasets" / "data" / "digits.csv.gz" if folders else None
    if path is None or not path.is_file():
        from sklearn.datasets import load_digits as load

        data = load()
        return data.images, data.target
    raw = np.loadtxt(path, delimiter=",")
    return raw[:, :-1].reshape(-1, 8, 8), raw[:, -1].astype(np.int64)
