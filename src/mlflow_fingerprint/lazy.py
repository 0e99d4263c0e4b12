"""Public names imported on first use (PEP 562), for the package, ``run`` and ``compare``: a
package whose ``__getattr__`` this makes stays cheap to import (``import mlflow`` imports ``run``
through the context provider's entry point; ``fingerprint --help`` imports the package; the
renderers import ``compare.report`` without the resolver). A module of its own, at the bottom of
the import graph, so ``run`` does not import the package above it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from importlib import import_module
from types import ModuleType


def lazy_names(module: str, sources: dict[str, str]) -> Callable[[str], object]:
    """The PEP 562 ``__getattr__`` of a package whose public names (``sources``: name -> the
    submodule that defines it) are imported on first use; this package's and ``run``'s."""
    namespace = vars(sys.modules[module])

    def __getattr__(name: str) -> object:
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(import_module(source, module), name)
        namespace[name] = value  # later lookups are plain attribute reads
        return value

    return __getattr__


def keep_public_names(module: str, names: Collection[str]) -> None:
    """Keep ``module``'s public ``names`` what they are when a submodule of the same name is
    imported: Python then sets the package attribute to the submodule (``mfp.capture`` the
    function would become the ``capture`` subpackage, ``compare.diff`` the ``diff`` module); the
    submodule stays in ``sys.modules``."""

    class _Package(ModuleType):
        def __setattr__(self, name: str, value: object) -> None:
            if name in names and isinstance(value, ModuleType):
                return
            super().__setattr__(name, value)

    sys.modules[module].__class__ = _Package
