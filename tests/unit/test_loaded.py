"""Modules read without importing them (``loaded.py``): an imported module, none, or the reason
it is not ready while another thread is still importing it."""

from __future__ import annotations

import json
import sys
import types
from importlib.machinery import ModuleSpec

import pytest

from mlflow_fingerprint.loaded import loaded


def test_imported_not_imported_and_half_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    assert loaded("json") is json
    assert loaded("mfp_no_such_module") is None
    half = types.ModuleType("mfp_half")
    half.__spec__ = ModuleSpec("mfp_half", None)
    half.__spec__._initializing = True  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mfp_half", half)
    assert loaded("mfp_half") == "mfp_half is still being imported by another thread"
    half.__spec__._initializing = False  # type: ignore[attr-defined]
    assert loaded("mfp_half") is half
