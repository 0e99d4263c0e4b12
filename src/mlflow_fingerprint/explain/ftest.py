"""The F test's p-value and Holm's correction, without scipy.

A field is called important only when its share is beyond what the noise floor explains; that is
an F test of its sum of squares against the residual mean square. The survival function of the F
distribution is a regularised incomplete beta function, computed here by its continued fraction
(Lentz's method, as in Numerical Recipes §6.4): a few dozen lines instead of a dependency.
Holm's step-down correction keeps the chance of calling any null field important at 5% however
many fields vary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

EPS = 3e-16
TINY = 1e-300
MAX_TERMS = 500


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (converges for x < (a+1)/(a+b+2))."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > TINY else TINY)
    h = d
    for m in range(1, MAX_TERMS + 1):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > TINY else TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > TINY else TINY
            h *= d * c
        if abs(d * c - 1.0) < EPS:
            break
    return h


def beta_regularized(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularised incomplete beta function, for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def f_survival(f: float, df1: float, df2: float) -> float:
    """P(F > f) for an F(df1, df2) variable: the p-value of an observed F ratio."""
    if not f > 0.0:
        return 1.0
    if math.isinf(f):
        return 0.0
    return beta_regularized(df2 / 2.0, df1 / 2.0, df2 / (df2 + df1 * f))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    m = len(p_values)
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
