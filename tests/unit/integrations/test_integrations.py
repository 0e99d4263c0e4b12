"""The integrations package (``integrations/__init__.py``): each callback's name is resolved on
first use from the submodule that defines it, so importing the package imports no trainer
framework. Resolving a name imports its framework (Lightning alone takes seconds), which the
real fits in tests/system/test_integrations.py do; here the table is checked against the
submodules' source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mlflow_fingerprint.integrations as integrations

PACKAGE = Path(integrations.__file__).parent


def classes_of(module: str) -> set[str]:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    return {node.name for node in tree.body if isinstance(node, ast.ClassDef)}


def test_each_public_name_is_a_class_of_the_submodule_it_is_looked_up_in() -> None:
    assert integrations.__all__ == ["FingerprintCallback", "FingerprintTrainerCallback"]
    for name, module in integrations._LAZY.items():
        assert name in classes_of(module), f"{name} is not defined in integrations/{module}.py"


def test_the_package_imports_no_framework_itself() -> None:
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    imported = {a.name for n in top for a in n.names} | {
        n.module for n in top if isinstance(n, ast.ImportFrom) and n.module
    }
    assert imported <= {"__future__", "annotations", "typing", "Any"}


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchCallback"):
        integrations.NoSuchCallback  # type: ignore[attr-defined]  # noqa: B018
