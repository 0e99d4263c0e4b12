"""One spelling per meaning for a float32 matmul precision (``model/precision.py``): what torch
and the older records call it, compared by meaning."""

from __future__ import annotations

from mlflow_fingerprint.model.precision import normalise_precision


def test_each_spelling_is_its_meaning() -> None:
    for ieee in ("highest", "HIGHEST", "none", False, None):
        assert normalise_precision(ieee) == "ieee"
    for tf32 in ("high", "medium", True):
        assert normalise_precision(tf32) == "tf32"
    assert normalise_precision("BF16") == "bf16"  # a word it does not know, in one case
    assert normalise_precision(3) == 3
