"""The F test's survival function against scipy, and Holm's step-down (``explain/ftest.py``)."""

from __future__ import annotations

import pytest
from scipy import stats

from mlflow_fingerprint.explain.ftest import f_survival, holm


@pytest.mark.parametrize(
    ("f", "df1", "df2"),
    [(0.5, 1, 16), (4.0, 1, 16), (3.2, 3, 40), (25.0, 2, 5), (1.0, 10, 200), (80.0, 1, 900)],
)
def test_f_survival_agrees_with_scipy(f: float, df1: int, df2: int) -> None:
    assert f_survival(f, df1, df2) == pytest.approx(stats.f.sf(f, df1, df2), rel=1e-9, abs=1e-15)


def test_holm_steps_down() -> None:
    assert holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
