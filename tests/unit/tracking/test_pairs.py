"""``tracking.pairs``: a run's mappings packed, keys and repeated values shared across runs."""

from __future__ import annotations

import pickle

import pytest

from mlflow_fingerprint.tracking.pairs import Held, Pairs, pack


def test_a_packed_mapping_reads_as_the_mapping_it_packs() -> None:
    source = {"b": "2", "a": "1", "c": "x"}
    packed = pack(source, Held())
    assert packed == source
    assert source == packed
    assert list(packed) == ["b", "a", "c"]  # the order it was given
    assert len(packed) == 3
    assert "a" in packed
    assert "z" not in packed
    assert packed["c"] == "x"
    assert packed.get("z") is None
    assert packed.get("z", 5) == 5
    assert dict(packed.items()) == source
    assert pickle.loads(pickle.dumps(packed)) == source
    with pytest.raises(KeyError):
        packed["z"]


def test_runs_read_together_share_keys_and_repeated_values() -> None:
    held = Held()
    # each run's texts are new objects, as a store's reader makes them
    first = pack({"".join(["l", "r"]): "".join(["0.", "1"]), "seed": str(1)}, held)
    second = pack({"".join(["l", "r"]): "".join(["0.", "1"]), "seed": str(2)}, held)
    assert next(iter(first)) is next(iter(second))
    assert first["lr"] is second["lr"]
    assert first["seed"] != second["seed"]


def test_a_mapping_held_whole_is_one_object_for_every_run() -> None:
    held = Held()
    steps = [pack({"val_loss": 0}, held, whole=True) for _ in range(3)]
    assert steps[0] is steps[1] is steps[2]
    assert pack({"val_loss": 4}, held, whole=True) is not steps[0]
    assert pack({"val_loss": 0}, held) is not steps[0]  # not whole unless asked


def test_an_empty_mapping_and_values_that_are_not_text() -> None:
    held = Held()
    assert pack({}, held) == {}
    assert len(pack({}, held)) == 0
    metrics = pack({"loss": 0.5, "nan": float("nan")}, held)
    assert metrics["loss"] == 0.5
    assert metrics["nan"] != metrics["nan"]
    assert isinstance(metrics, Pairs)
    assert repr(pack({"a": "1"}, held)) == "Pairs({'a': '1'})"
