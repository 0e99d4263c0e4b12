"""The package's own ``__init__.py``: its public names, each the object its source module
defines, listed for completion with nothing else, and kept when a submodule of the same name is
imported (``lazy.py``'s mechanics are ``test_lazy.py``'s, on a package of its own)."""

from __future__ import annotations

import importlib
import sys

import pytest

import mlflow_fingerprint as mfp


def test_every_public_name_is_its_source_module_s_object() -> None:
    for name in mfp.__all__:
        source = mfp._SOURCES[name]
        module = importlib.import_module(source, "mlflow_fingerprint")
        assert getattr(mfp, name) is getattr(module, name), name
    assert set(mfp.__all__) == set(mfp._SOURCES)


def test_completion_lists_the_public_names_and_the_dunders_only() -> None:
    listed = dir(mfp)
    assert set(mfp.__all__) <= set(listed)
    assert "keep_public_names" not in listed
    assert "lazy_names" not in listed
    assert "_SOURCES" not in listed
    assert all(name in mfp.__all__ or name.startswith("__") for name in listed)
    assert listed == sorted(listed)


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="no attribute 'diffs'"):
        mfp.diffs  # noqa: B018


def test_the_capture_function_stays_the_capture_function() -> None:
    subpackage = importlib.import_module("mlflow_fingerprint.capture")  # as the CLI does
    assert sys.modules["mlflow_fingerprint.capture"] is subpackage
    assert callable(mfp.capture)
    assert mfp.capture is subpackage.capture
    assert mfp.capture is not subpackage
