"""What ``explain`` found: a frozen record every renderer reads, and its JSON (docs/explain.md).

``Explanation.to_dict()`` is docs/design.md's contract (metric, at, runs, noise, factors, ruled_out,
outliers, missing, separate_by, left_out) with a few additive keys: each factor's verdict, kind,
effect class, partial omega-squared, degrees of freedom, p-value and metric values per level;
the noise's fields and degrees of freedom; the replicate groups; the experiment; notes. A number
a JSON document cannot hold (NaN, infinity) is ``null``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.vocabulary import (
    COVERAGES,
    EFFECTS,
    FACTOR_KINDS,
    FACTOR_VERDICTS,
    Coverage,
    Effect,
    FactorKind,
    FactorVerdict,
    check,
)


def _num(value: float | None, digits: int = 6) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{digits}g}")


@dataclass(frozen=True)
class Noise:
    """The noise floor: the spread of the metric among replicates."""

    sd: float | None
    share: float | None
    groups: int
    runs: int
    df: int = 0
    fields: tuple[str, ...] = ()  # the seed fields that varied: what replicates differ in

    def to_dict(self) -> dict[str, Any]:
        return {
            "sd": _num(self.sd),
            "share": _num(self.share, 4),
            "groups": self.groups,
            "runs": self.runs,
            "df": self.df,
            "fields": list(self.fields),
        }


@dataclass(frozen=True)
class Level:
    """The metric over the runs with one value of a factor."""

    value: str
    n: int
    mean: float
    sd: float | None
    values: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mean": _num(self.mean, 8),
            "sd": _num(self.sd),
            "values": [_num(v, 8) for v in self.values],
        }


@dataclass(frozen=True)
class Factor:
    """A field, a block of fields that moved together, or the interaction of two blocks."""

    fields: tuple[str, ...]
    label: str  # how a person names it: its lead field(s)
    share: float  # omega-squared: its share of the metric's variance (0 when below noise)
    interval: tuple[float, float]  # bootstrap over runs, 95%
    by_value: tuple[Level, ...]
    confounded: bool
    verdict: FactorVerdict
    kind: FactorKind = "main"
    effect: Effect = "recipe"
    partial: float = 0.0  # partial omega-squared
    df: int = 0
    p: float | None = None  # Holm-adjusted p-value of its F test against the residual
    near: bool = False  # confounded by near-aliasing (a run or two apart), not exactly

    def __post_init__(self) -> None:
        check(self.verdict, FACTOR_VERDICTS, "factor verdict")
        check(self.kind, FACTOR_KINDS, "factor kind")
        check(self.effect, EFFECTS, "effect")

    def to_dict(self) -> dict[str, Any]:
        return {
            "fields": list(self.fields),
            "label": self.label,
            "share": _num(self.share, 4),
            "interval": [_num(self.interval[0], 4), _num(self.interval[1], 4)],
            "by_value": {level.value: level.to_dict() for level in self.by_value},
            "confounded": self.confounded,
            "near": self.near,
            "verdict": self.verdict,
            "kind": self.kind,
            "effect": self.effect,
            "partial": _num(self.partial, 4),
            "df": self.df,
            "p": _num(self.p, 4),
        }


@dataclass(frozen=True)
class Outlier:
    run_id: str
    group: str
    z: float
    diff: str  # the command that says what differs from the group's typical run
    name: str | None = None
    value: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "group": self.group,
            "z": _num(self.z, 4),
            "diff": self.diff,
            "name": self.name,
            "value": _num(self.value, 8),
        }


@dataclass(frozen=True)
class Missing:
    """Runs explained without their whole fingerprint, and the fields that left out."""

    runs: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    coverage: Mapping[str, Coverage] = field(default_factory=dict)
    why: Mapping[str, str] = field(default_factory=dict)  # why the record is not whole

    def __post_init__(self) -> None:
        for value in self.coverage.values():
            check(value, COVERAGES, "coverage")

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": list(self.runs),
            "fields": list(self.fields),
            "coverage": dict(self.coverage),
            "why": dict(self.why),
        }


@dataclass(frozen=True)
class Separation:
    fields: tuple[str, ...]
    runs_needed: str

    def to_dict(self) -> dict[str, Any]:
        return {"fields": list(self.fields), "runs_needed": self.runs_needed}


@dataclass(frozen=True)
class LeftOut:
    run_id: str
    why: str
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "why": self.why, "name": self.name}


@dataclass(frozen=True)
class Group:
    """A replicate group: runs equal in everything but their seeds."""

    id: str
    runs: Sequence[str]  # a tuple, or the roster's ``RunIds`` (tracking/roster.py)
    mean: float
    sd: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "runs": list(self.runs),
            "mean": _num(self.mean, 8),
            "sd": _num(self.sd),
        }


@dataclass(frozen=True)
class Explanation:
    experiment: str
    experiment_id: str
    metric: str
    at: str | int  # "final" or a step
    runs: int
    mean: float
    sd: float
    noise: Noise
    factors: tuple[Factor, ...] = ()
    ruled_out: tuple[str, ...] = ()
    outliers: tuple[Outlier, ...] = ()
    missing: Missing = field(default_factory=Missing)
    separate_by: tuple[Separation, ...] = ()
    left_out: tuple[LeftOut, ...] = ()
    groups: tuple[Group, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def important(self) -> tuple[Factor, ...]:
        return tuple(f for f in self.factors if f.verdict == "important")

    @property
    def undecided(self) -> tuple[Factor, ...]:
        return tuple(f for f in self.factors if f.verdict == "undecided")

    def parts(self) -> Iterator[tuple[str, Any]]:
        """:meth:`to_dict`'s keys in order, each with its value; a list of factors, outliers,
        runs left out or groups comes as an iterator of its items' dicts, made as they are
        read. Why: a report of 100,000 runs lists every run in its group and its value under
        each factor, and the whole dict of it was about 13 MiB at once, held beside the
        report it was made from (``present.explain.pieces`` writes it part by part)."""
        yield "experiment", {"name": self.experiment, "id": self.experiment_id}
        yield "metric", self.metric
        yield "at", self.at
        yield "runs", self.runs
        yield "mean", _num(self.mean, 8)
        yield "sd", _num(self.sd)
        yield "noise", self.noise.to_dict()
        yield "factors", (f.to_dict() for f in self.factors)
        yield "ruled_out", list(self.ruled_out)
        yield "outliers", (o.to_dict() for o in self.outliers)
        yield "missing", self.missing.to_dict()
        yield "separate_by", [s.to_dict() for s in self.separate_by]
        yield "left_out", (x.to_dict() for x in self.left_out)
        yield "groups", (g.to_dict() for g in self.groups)
        yield "notes", list(self.notes)

    def to_dict(self) -> dict[str, Any]:
        return {
            key: list(value) if isinstance(value, Iterator) else value
            for key, value in self.parts()
        }
