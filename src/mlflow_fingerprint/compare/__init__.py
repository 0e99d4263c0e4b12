"""The comparator: why two runs differ, from their fingerprints and their metrics.

``diff`` and ``Report`` are imported on first use (PEP 562): importing one submodule (the renderers
import ``compare.report``) must not pull in the resolver, the MLflow reads or the rules.
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from ..errors import ResolveError
    from .diff import diff
    from .report import Report

# public name -> the module that defines it
_SOURCES = {"Report": ".report", "ResolveError": "..errors", "diff": ".diff"}

__all__ = ["Report", "ResolveError", "diff"]


def __getattr__(name: str) -> object:
    """Import a public name's module on first use (PEP 562)."""
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(source, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(ModuleType):
    """Keeps ``compare.diff`` the function: importing the ``compare.diff`` submodule (as
    ``from mlflow_fingerprint.compare.diff import diff`` does) makes Python set the package
    attribute of that name to the submodule; the submodule stays in ``sys.modules``."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _SOURCES and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
