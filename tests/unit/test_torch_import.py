"""torch through one lock, never raising into training; left alone in a Keras program."""

from __future__ import annotations

import sys

import pytest

from mlflow_fingerprint import torch_import


def test_load_torch_returns_the_imported_module() -> None:
    import torch

    module, why = torch_import.load_torch()
    assert (module, why) == (torch, None)
    assert torch_import.imported_by_program() is not None


def test_a_broken_torch_is_a_reason_not_an_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    module, why = torch_import.load_torch()
    assert module is None
    assert why is not None
    assert why.startswith("torch is not importable (ModuleNotFoundError: import of torch halted")


def test_a_keras_program_without_torch_leaves_it_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setitem(sys.modules, "keras", sys)
    assert torch_import.program_torch() == (None, "not read: the program imported keras, not torch")
    assert torch_import.imported_by_program() is None
