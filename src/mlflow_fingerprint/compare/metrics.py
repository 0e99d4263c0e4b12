"""Compare one metric's histories: final values, bitwise equality and the first divergence step.

Histories are lined up entry by entry in step order. The first divergence is the first step where
the two disagree beyond ``|b - a| <= atol + rtol * |a|`` (run A is the reference, as in
``torch.testing.assert_close``; comparators.md §7), where one logged a step the other did not, or
where the shorter history ends. With both tolerances 0 (the default) agreement is exact; NaN
agrees with NaN.
"""

from __future__ import annotations

import math

import numpy as np

from ..tracking.history import History
from .report import Curve, MetricComparison

CURVE_POINTS = 400


def _agree(a: np.ndarray, b: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    # numpy's stubs type ndarray's comparisons (and, unfollowed, its functions) as Any
    agree: np.ndarray
    both_nan = np.isnan(a) & np.isnan(b)
    if atol == 0 and rtol == 0:
        agree = (a == b) | both_nan
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            agree = (np.abs(b - a) <= atol + rtol * np.abs(a)) | both_nan | (a == b)
    return agree


def first_divergence(ha: History, hb: History, atol: float = 0.0, rtol: float = 0.0) -> int | None:
    """The first step where the histories disagree, or None where they agree throughout."""
    n = min(len(ha), len(hb))
    ok = (ha.steps[:n] == hb.steps[:n]) & _agree(ha.values[:n], hb.values[:n], atol, rtol)
    if not ok.all():
        i = int(np.argmin(ok))
        return int(min(ha.steps[i], hb.steps[i]))
    if len(ha) != len(hb):
        longer = ha if len(ha) > len(hb) else hb
        return int(longer.steps[n])
    return None


def bitwise_equal(ha: History, hb: History) -> bool:
    return (
        len(ha) == len(hb)
        and bool(np.array_equal(ha.steps, hb.steps))
        and bool(np.array_equal(ha.values.view(np.uint64), hb.values.view(np.uint64)))
    )


def thin(history: History, keep: int | None = None, points: int = CURVE_POINTS) -> Curve:
    """At most ``points`` evenly spaced entries, plus the last and the entry at step ``keep``."""
    n = len(history)
    if n == 0:
        return Curve()
    index = np.unique(np.linspace(0, n - 1, min(n, points)).astype(np.int64))
    if keep is not None:
        at = np.searchsorted(history.steps, keep)
        index = np.unique(np.concatenate([index, [min(int(at), n - 1)]]))
    return Curve(
        tuple(float(s) for s in history.steps[index]),
        tuple(float(v) for v in history.values[index]),
    )


def _final(history: History) -> float:
    return float(history.values[-1]) if len(history) else math.nan


def compare(
    name: str, ha: History, hb: History, atol: float = 0.0, rtol: float = 0.0
) -> MetricComparison:
    a, b = _final(ha), _final(hb)
    abs_diff = abs(b - a) if math.isfinite(a) and math.isfinite(b) else math.nan
    rel_diff = abs_diff / abs(a) if a != 0 and math.isfinite(abs_diff) else None
    if a == b:
        abs_diff, rel_diff = 0.0, 0.0
    step = first_divergence(ha, hb, atol, rtol)
    return MetricComparison(
        name=name,
        a=a,
        b=b,
        abs_diff=abs_diff,
        rel_diff=rel_diff,
        equal=step is None,
        bitwise_equal=bitwise_equal(ha, hb),
        first_divergence_step=step,
        steps_a=len(ha),
        steps_b=len(hb),
        curve_a=thin(ha, step),
        curve_b=thin(hb, step),
    )
