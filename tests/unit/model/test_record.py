"""The plain record: freezing, thawing, the unavailable shape and dotted reads."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from mlflow_fingerprint.model.fields import GIT_DIRTY
from mlflow_fingerprint.model.record import (
    freeze,
    get_path,
    is_unavailable,
    read,
    thaw,
    unavailable,
)


def test_freeze_makes_read_only_and_thaw_gives_it_back() -> None:
    value = {"a": [1, {"b": 2}], "c": "x"}
    frozen = freeze(value)
    assert isinstance(frozen, MappingProxyType)
    assert frozen["a"] == (1, MappingProxyType({"b": 2}))
    with pytest.raises(TypeError):
        frozen["c"] = "y"  # type: ignore[index]
    assert thaw(frozen) == value


def test_unavailable_is_the_one_shape_recognised() -> None:
    assert is_unavailable(unavailable("no driver"))
    assert not is_unavailable({"unavailable": "x", "other": 1})
    assert not is_unavailable("unavailable")


def test_get_path_walks_mappings_and_sequences_else_default() -> None:
    record = {"gpu": {"devices": [{"name": "H100"}]}}
    assert get_path(record, "gpu.devices.0.name") == "H100"
    assert get_path(record, "gpu.devices.1.name", "none") == "none"
    assert get_path(record, "gpu.devices.x") is None
    assert get_path(record, "cuda.version") is None


def test_read_keeps_only_a_value_of_the_declared_type() -> None:
    assert read({"git": {"dirty": True}}, GIT_DIRTY) is True
    assert read({"git": {"dirty": "yes"}}, GIT_DIRTY) is None
    assert read({"git": unavailable("no git")}, GIT_DIRTY) is None
