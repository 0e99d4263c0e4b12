"""``explain``: which recorded differences account for the spread of a metric across an
experiment's runs, how much of it is noise, and what these runs cannot separate.

The pieces, in the order data flows through them: ``table`` (runs to fields), ``groups``
(replicates and the noise floor), ``design`` (levels and blocks of fields that moved together),
``anova`` (Type II sums of squares), ``ftest`` (p-values), ``analysis`` (the method),
``experiment`` (the MLflow reads and the public function), ``result`` (the frozen result).
``explain`` and ``Explanation`` are imported on first use (PEP 562), so a renderer importing
``result`` does not pull in the MLflow reads.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .experiment import explain
    from .result import Explanation

_SOURCES = {"explain": ".experiment", "Explanation": ".result"}

__all__ = ["Explanation", "explain"]


def __getattr__(name: str) -> object:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(source, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
