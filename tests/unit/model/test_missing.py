"""``MISSING``: one falsy sentinel, distinct from None, that prints as its name."""

from __future__ import annotations

from mlflow_fingerprint.model.missing import MISSING, _Missing


def test_missing_is_one_falsy_value_distinct_from_none() -> None:
    assert _Missing() is MISSING
    assert MISSING is not None
    assert not MISSING
    assert repr(MISSING) == "MISSING"
