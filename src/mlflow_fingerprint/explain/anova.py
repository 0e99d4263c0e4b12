"""Type II sums of squares of a linear model on one-hot fields, by least squares in numpy.

Every term of the model (a block of fields, or the interaction of two blocks) is constant inside
a *cell*: the runs that agree on every block. So the fit works on the cells' sufficient
statistics (how many runs, their sum and sum of squares) instead of the runs: a weighted least
squares on the cell means, plus the spread inside the cells, gives exactly the residual sum of
squares of the run-level model. A store of 1,000 runs in 200 configurations is a 200-row
problem, and a bootstrap sample is a new set of counts for the same cells.

Type II: each term's sum of squares is what it adds to the model of every term that does not
contain it (an interaction contains its two main effects), so a main effect is adjusted for the
other main effects but not for its own interactions, and the order of the terms does not
matter. Rank-deficient designs are handled by the ranks of the fits: a term's degrees of
freedom are what it adds to the rank.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .design import Block, treatment, unique_rows

Term = tuple[int, ...]  # block indices: (i,) a main effect, (i, j) their interaction


@dataclass(frozen=True)
class Cells:
    """The model's terms as columns over the cells, and each run's cell."""

    terms: tuple[Term, ...]
    of_run: np.ndarray  # the cell of each run
    columns: Mapping[Term, np.ndarray]  # cells x degrees of freedom, per term
    count: int  # how many cells

    def sample(self, y: np.ndarray, runs: np.ndarray | None = None) -> Sample:
        """The sufficient statistics of ``y`` (of the runs ``runs``, repeats counted; all runs
        when None) per cell."""
        of_run = self.of_run if runs is None else self.of_run[runs]
        values = y if runs is None else y[runs]
        return Sample.of(of_run, values, self.count)


def design_rank(design: Cells) -> int:
    """The rank of ``[1, every term's columns]``: what the runs can estimate of the model."""
    matrix = np.column_stack([np.ones(design.count), *(design.columns[t] for t in design.terms)])
    return int(np.linalg.matrix_rank(matrix))


def cells(blocks: Sequence[Block], terms: Sequence[Term], runs: int) -> Cells:
    """The cells of ``runs`` runs under ``blocks`` (one cell when no block varies)."""
    codes = np.column_stack([b.codes for b in blocks]) if blocks else np.zeros((runs, 1), np.int64)
    distinct, of_run = unique_rows(codes)
    main = {(i,): treatment(distinct[:, i], b.levels) for i, b in enumerate(blocks)}
    columns: dict[Term, np.ndarray] = {}
    for term in terms:
        if len(term) == 1:
            columns[term] = main[term]
        else:
            a, b = (main[(i,)] for i in term)
            columns[term] = (a[:, :, None] * b[:, None, :]).reshape(len(distinct), -1)
    return Cells(tuple(terms), np.asarray(of_run).reshape(-1), columns, len(distinct))


@dataclass(frozen=True)
class Sample:
    """Sufficient statistics of the metric per cell: count, sum and sum of squares."""

    count: np.ndarray
    total: np.ndarray
    squares: np.ndarray

    @classmethod
    def of(cls, of_run: np.ndarray, y: np.ndarray, cells_count: int) -> Sample:
        return cls(
            np.bincount(of_run, minlength=cells_count).astype(float),
            np.bincount(of_run, weights=y, minlength=cells_count),
            np.bincount(of_run, weights=y * y, minlength=cells_count),
        )

    @property
    def n(self) -> int:
        return int(self.count.sum())

    @cached_property
    def within(self) -> float:
        """The spread inside the cells: what no model of these fields can explain."""
        seen = self.count > 0
        ss = self.squares[seen] - self.total[seen] ** 2 / self.count[seen]
        return float(max(ss.sum(), 0.0))

    @property
    def ss_total(self) -> float:
        return float(max(self.squares.sum() - self.total.sum() ** 2 / self.n, 0.0))


@dataclass(frozen=True)
class TermSS:
    ss: float
    df: int


@dataclass(frozen=True)
class Anova:
    n: int
    ss_total: float
    rss: float  # residual sum of squares of the whole model
    df_error: int
    terms: Mapping[Term, TermSS]

    @property
    def ms_error(self) -> float | None:
        return self.rss / self.df_error if self.df_error > 0 else None

    def omega_squared(self, term: Term) -> float:
        """The term's share of the metric's variance, bias-corrected (can be below 0)."""
        t, ms = self.terms[term], self.ms_error or 0.0
        denominator = self.ss_total + ms
        return (t.ss - t.df * ms) / denominator if denominator > 0 else 0.0

    def partial_omega_squared(self, term: Term) -> float:
        """The term's share of the variance the other terms leave (can be below 0)."""
        t, ms = self.terms[term], self.ms_error or 0.0
        denominator = t.ss + (self.n - t.df) * ms
        return (t.ss - t.df * ms) / denominator if denominator > 0 else 0.0

    def f_ratio(self, term: Term) -> float | None:
        t, ms = self.terms[term], self.ms_error
        if ms is None or t.df == 0:
            return None
        if ms == 0:
            return float("inf") if t.ss > 0 else 0.0
        return (t.ss / t.df) / ms


def _fit(columns: Sequence[np.ndarray], sample: Sample) -> tuple[float, int]:
    """(residual sum of squares, rank) of the model ``[1, columns]`` on the sample's runs."""
    seen = sample.count > 0
    weight = np.sqrt(sample.count[seen])
    rows = int(seen.sum())
    matrix = np.column_stack([np.ones(rows), *(c[seen] for c in columns)]) * weight[:, None]
    target = sample.total[seen] / sample.count[seen] * weight
    beta, _, rank, _ = np.linalg.lstsq(matrix, target, rcond=None)
    residual = target - matrix @ beta
    return sample.within + float(residual @ residual), int(rank)


def contains(outer: Term, inner: Term) -> bool:
    return outer != inner and set(inner) <= set(outer)


def anova(design: Cells, sample: Sample) -> Anova:
    """Type II sums of squares of every term of ``design`` on ``sample``."""
    memo: dict[frozenset[Term], tuple[float, int]] = {}

    def fit(terms: frozenset[Term]) -> tuple[float, int]:
        if terms not in memo:
            memo[terms] = _fit([design.columns[t] for t in design.terms if t in terms], sample)
        return memo[terms]

    everything = frozenset(design.terms)
    rss, rank = fit(everything)
    out = {}
    for term in design.terms:
        base = frozenset(t for t in design.terms if not contains(t, term))
        rss_base, rank_base = fit(base)
        rss_less, rank_less = fit(base - {term})
        out[term] = TermSS(max(rss_less - rss_base, 0.0), rank_base - rank_less)
    return Anova(sample.n, sample.ss_total, rss, sample.n - rank, out)
