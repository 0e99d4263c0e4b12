"""Public names imported on first use (PEP 562), for the package and for ``run``: a package whose
``__getattr__`` this makes stays cheap to import (``import mlflow`` imports ``run`` through the
context provider's entry point; ``fingerprint --help`` imports the package). A module of its own, at
the bottom of the import graph, so ``run`` does not import the package above it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module


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
