"""The comparator: why two runs differ, from their fingerprints and their metrics.

``diff`` and ``Report`` are imported on first use (PEP 562): importing one submodule (the renderers
import ``compare.report``) must not pull in the resolver, the MLflow reads or the rules.
"""

from __future__ import annotations

from ..lazy import keep_public_names, lazy_names

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from ..errors import ResolveError
    from .diff import diff
    from .report import Report

# public name -> the module that defines it
_SOURCES = {"Report": ".report", "ResolveError": "..errors", "diff": ".diff"}

__all__ = ["Report", "ResolveError", "diff"]


__getattr__ = lazy_names(__name__, _SOURCES)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


keep_public_names(__name__, _SOURCES)  # ``from ...compare.diff import diff`` imports it
