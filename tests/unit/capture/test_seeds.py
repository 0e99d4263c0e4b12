"""``capture/seeds.py``: the global generators' state digests."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from mlflow_fingerprint.capture.seeds import rng_state_digests


def test_numpy_s_generator_is_read_once_numpy_random_is_imported() -> None:
    kept = np.random.get_state()  # the session's generator, given back as it was
    try:
        before = rng_state_digests()["numpy"]
        np.random.random()
        after = rng_state_digests()["numpy"]
        assert before != after  # a draw moves the digest
        np.random.seed(3)
        assert rng_state_digests()["numpy"] == rng_state_digests()["numpy"]
    finally:
        np.random.set_state(kept)


def test_a_program_that_never_imported_numpy_random_is_not_made_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """numpy imported without ``numpy.random`` (numpy 2 loads it on first use): nothing was drawn
    from its generator, and reading it would import it (up to 80 ms of the probe's first call)."""
    monkeypatch.delitem(sys.modules, "numpy.random")
    digests = rng_state_digests()
    assert "numpy" not in digests
    assert "numpy.random" not in sys.modules
    assert set(digests) == {"python"}
