"""The TensorFlow and Keras sections (``capture/tensorflow_info.py``) where the program has not
imported them, or is still importing them on another thread: capture never imports either (a
torch program must not pay seconds for TensorFlow), and never reads a half-imported module.

What the probes read from an imported TensorFlow and Keras (version, op determinism, global
seed, TF32, the Keras seed per thread) is read from the real frameworks in
``tests/system/test_tensorflow.py``: importing TensorFlow takes longer than a unit test may."""

from __future__ import annotations

import importlib.machinery
import sys
from types import ModuleType

import pytest

from mlflow_fingerprint.capture import tensorflow_info
from mlflow_fingerprint.capture.core import make_context

FRAMEWORKS = ("tensorflow", "keras")


@pytest.fixture
def not_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The program imported neither (as in this process, unless another test did)."""
    for name in FRAMEWORKS:
        monkeypatch.delitem(sys.modules, name, raising=False)


def half_imported(name: str) -> ModuleType:
    """A module as ``sys.modules`` holds it while another thread runs its ``import``."""
    module = ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    module.__spec__._initializing = True  # type: ignore[attr-defined]  # what importlib sets
    return module


def test_a_framework_the_program_did_not_import_is_said_so_and_not_imported(
    not_imported: None,
) -> None:
    ctx = make_context()
    assert tensorflow_info.probe(ctx) == {"imported": False}
    assert tensorflow_info.probe_keras(ctx) == {"imported": False}
    assert tensorflow_info.thread_values() == {}
    assert not any(name in sys.modules for name in FRAMEWORKS)


def test_a_framework_still_being_imported_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in FRAMEWORKS:
        monkeypatch.setitem(sys.modules, name, half_imported(name))
    ctx = make_context()
    assert tensorflow_info.probe(ctx) == {
        "unavailable": "tensorflow is still being imported by another thread"
    }
    assert tensorflow_info.probe_keras(ctx) == {
        "unavailable": "keras is still being imported by another thread"
    }
    assert tensorflow_info.thread_values() == {}
