"""The comparator package's public names (``compare/__init__.py``): imported on first use from
the module that defines each, and kept over the submodules of the same name."""

from __future__ import annotations

import importlib

import pytest

import mlflow_fingerprint.compare as compare
from mlflow_fingerprint.errors import ResolveError


def test_each_public_name_is_the_object_its_module_defines() -> None:
    from mlflow_fingerprint.compare.diff import diff
    from mlflow_fingerprint.compare.report import Report

    assert (compare.diff, compare.Report, compare.ResolveError) == (diff, Report, ResolveError)
    assert sorted(compare.__all__) == ["Report", "ResolveError", "diff"]
    assert set(compare.__all__) <= set(dir(compare))


def test_the_diff_function_is_not_replaced_by_the_diff_module() -> None:
    module = importlib.import_module("mlflow_fingerprint.compare.diff")
    function = compare.diff
    compare.diff = module  # type: ignore[assignment]  # what importing a submodule does
    assert compare.diff is function is module.diff
    compare.Report = module  # type: ignore[misc,assignment]
    assert compare.Report is not module


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        compare.nothing  # type: ignore[attr-defined]  # noqa: B018
