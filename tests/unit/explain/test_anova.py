"""Type II sums of squares on cells (``explain/anova.py``) against a run-level least squares
written here, on an unbalanced design, a balanced one and a bootstrap sample."""

from __future__ import annotations

import numpy as np
import pytest

from mlflow_fingerprint.explain.anova import anova, cells
from mlflow_fingerprint.explain.design import treatment
from support.blocks import design_blocks, texts_of


def run_level_rss(y: np.ndarray, parts: list[np.ndarray]) -> float:
    matrix = np.column_stack([np.ones(len(y)), *parts])
    beta = np.linalg.lstsq(matrix, y, rcond=None)[0]
    residual = y - matrix @ beta
    return float(residual @ residual)


def test_type_ii_on_cells_equals_run_level_least_squares_on_an_unbalanced_design() -> None:
    rng = np.random.default_rng(3)
    n = 60
    a, b, c = rng.integers(0, 3, n), rng.integers(0, 2, n), rng.integers(0, 4, n)
    y = 0.5 * a + 0.2 * b + 0.7 * ((a == 2) & (b == 1)) + rng.normal(0, 0.3, n)
    found = design_blocks(texts_of(a=a, b=b, c=c))
    assert [blk.fields for blk in found] == [("a",), ("b",), ("c",)]
    terms = [(0,), (1,), (2,), (0, 1)]
    design = cells(found, terms, n)
    fitted = anova(design, design.sample(y))
    x = {(i,): treatment(found[i].codes, found[i].levels) for i in range(3)}
    ab = (x[(0,)][:, :, None] * x[(1,)][:, None, :]).reshape(n, -1)
    full = run_level_rss(y, [x[(0,)], x[(1,)], x[(2,)], ab])
    mains = run_level_rss(y, [x[(0,)], x[(1,)], x[(2,)]])
    expected = {
        (0,): run_level_rss(y, [x[(1,)], x[(2,)]]) - mains,  # A given B, C; not A x B
        (1,): run_level_rss(y, [x[(0,)], x[(2,)]]) - mains,
        (2,): run_level_rss(y, [x[(0,)], x[(1,)], ab]) - full,
        (0, 1): mains - full,
    }
    for term, ss in expected.items():
        assert fitted.terms[term].ss == pytest.approx(ss, rel=1e-9)
    assert [fitted.terms[t].df for t in terms] == [2, 1, 3, 2]
    assert fitted.rss == pytest.approx(full, rel=1e-9)
    assert fitted.df_error == n - 1 - 2 - 1 - 3 - 2


def test_balanced_main_effect_is_the_textbook_sum_of_squares() -> None:
    a, b = np.repeat([0, 1, 2], 8), np.tile(np.repeat([0, 1], 4), 3)
    y = np.random.default_rng(0).normal(size=24) + a
    found = design_blocks(texts_of(a=a, b=b))
    design = cells(found, [(0,), (1,)], 24)
    fitted = anova(design, design.sample(y))
    means = np.array([y[a == k].mean() for k in range(3)])
    assert fitted.terms[(0,)].ss == pytest.approx(8 * ((means - y.mean()) ** 2).sum())


def test_a_bootstrap_sample_is_the_same_runs_counted_again() -> None:
    a = np.array([0, 0, 1, 1, 2, 2])
    y = np.array([1.0, 1.5, 2.0, 2.5, 4.0, 3.0])
    design = cells(design_blocks(texts_of(a=a)), [(0,)], 6)
    picks = np.array([0, 0, 3, 4, 5, 5])
    resampled = anova(design, design.sample(y, picks))
    again = cells(design_blocks(texts_of(a=a[picks])), [(0,)], 6)
    direct = anova(again, again.sample(y[picks]))
    assert resampled.terms[(0,)].ss == pytest.approx(direct.terms[(0,)].ss)
