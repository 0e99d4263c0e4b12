"""``explain``: which recorded differences account for the spread of a metric across an
experiment's runs, how much of it is noise, and what these runs cannot separate.

The pieces, in the order data flows through them: ``table`` (runs to fields), ``groups``
(replicates and the noise floor), ``design`` (levels and blocks of fields that moved together),
``anova`` (Type II sums of squares), ``ftest`` (p-values), ``analysis`` (the method),
``experiment`` (the MLflow reads and the public function), ``options`` (what it takes),
``result`` (the frozen result).
Nothing here imports mlflow until ``explain`` reads a store.
"""

from __future__ import annotations

from .experiment import explain
from .options import ExplainOptions
from .result import Explanation

__all__ = ["ExplainOptions", "Explanation", "explain"]
