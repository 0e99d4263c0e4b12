"""The comparator's result: a frozen record every renderer and the JSON contract read from.

``Report.to_dict()`` is the JSON contract of docs/design.md (verdict, a, b, differences, enablers,
metrics) plus a few additive keys (source of each rule, replicate spread, notes). Values a JSON
document cannot hold are made explicit: a field one record lacks is ``null``, a non-finite metric
value is ``null``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.missing import MISSING
from ..model.vocabulary import (
    BAND_KINDS,
    EFFECTS,
    REF_KINDS,
    VERDICTS,
    BandKind,
    Effect,
    RefKind,
    Verdict,
    check,
)
from .where import Where

EXIT_SAME = 0
EXIT_DIFFER = 1


@dataclass(frozen=True)
class RunRef:
    """What the user named and what it resolved to."""

    ref: str
    run_id: str | None = None
    kind: RefKind = "run"  # "run" (MLflow), "file" (fingerprint JSON) or "object" (in-process)
    name: str | None = None
    experiment_id: str | None = None

    def __post_init__(self) -> None:
        check(self.kind, REF_KINDS, "reference kind")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ref": self.ref, "run_id": self.run_id, "kind": self.kind}
        if self.name is not None:
            out["name"] = self.name
        if self.experiment_id is not None:
            out["experiment_id"] = self.experiment_id
        return out

    @property
    def label(self) -> str:
        """Short name for tables and chart legends."""
        if self.kind == "run" and self.run_id:
            return f"{self.name} ({self.run_id[:8]})" if self.name else self.run_id[:8]
        return self.ref


def json_value(value: object) -> Any:
    """A field value as JSON: absent -> null; tuples -> lists; everything else as recorded."""
    if value is MISSING:
        return None
    if isinstance(value, tuple):
        return [json_value(v) for v in value]
    return value


def json_float(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


@dataclass(frozen=True)
class Difference:
    """One thing that differs; where it is a user's change (an option), the fields it switched
    are its ``consequences`` (``compare/changes.py``), each with its own rule's words."""

    field: str
    a: Any
    b: Any
    effect: Effect
    explanation: str
    source: str
    rank: int
    consequences: tuple[Difference, ...] = ()

    def __post_init__(self) -> None:
        check(self.effect, EFFECTS, "effect")

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "a": json_value(self.a),
            "b": json_value(self.b),
            "effect": self.effect,
            "explanation": self.explanation,
            "rank": self.rank,
            "source": self.source,
            "consequences": [c.to_dict() for c in self.consequences],
        }


@dataclass(frozen=True)
class Enabler:
    """A setting present in both runs that lets one fingerprint give different numbers."""

    field: str
    explanation: str
    fix: str

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "explanation": self.explanation, "fix": self.fix}


@dataclass(frozen=True)
class Curve:
    """A metric history thinned for drawing: at most a few hundred points, divergence kept."""

    steps: tuple[float, ...] = ()
    values: tuple[float, ...] = ()


@dataclass(frozen=True)
class Spread:
    """Run-to-run noise of a metric over replicate runs: runs of A's (and B's) recipe, env and
    numerics that differ only in their seeds and what enablers drew (``compare/replicates.py``).

    ``band`` is the largest gap between two replicates of one recipe at the compared step (the
    A–B pair itself left out); ``parts_at`` the earliest step at which two replicates' curves
    part (None: bitwise equal). ``runs`` is how many runs the band rests on, ``groups`` of which
    recipe (``A``, ``B`` or ``A=B`` when A and B are replicates of each other). ``seed``: the
    seed A and B share, which every run of the band was seeded with too (run-to-run noise at
    that seed); None where the band is the spread between runs of different seeds."""

    seeds: int  # runs the band rests on (the name the JSON contract had for it)
    std: float
    low: float
    high: float
    outside: bool  # |a - b| exceeds the band, or the curves part earlier than replicates do
    band: float = math.nan
    parts_at: int | None = None
    groups: tuple[str, ...] = ()
    seed: int | None = None

    @property
    def runs(self) -> int:
        return self.seeds

    @property
    def kind(self) -> BandKind:
        """Which band the pair was judged against: its own seed's reruns, or seed to seed."""
        return check("same_seed" if self.seed is not None else "across_seeds", BAND_KINDS, "band")

    def to_dict(self) -> dict[str, Any]:
        return {
            "seeds": self.seeds,
            "runs": self.seeds,
            "std": json_float(self.std),
            "min": json_float(self.low),
            "max": json_float(self.high),
            "band": json_float(self.band),
            "parts_at": self.parts_at,
            "groups": list(self.groups),
            "kind": self.kind,
            "seed": self.seed,
            "outside": self.outside,
        }


@dataclass(frozen=True)
class MetricComparison:
    name: str
    a: float
    b: float
    abs_diff: float
    rel_diff: float | None
    equal: bool  # histories agree within atol/rtol (exact by default)
    bitwise_equal: bool  # every step and every value identical, bit for bit
    first_divergence_step: int | None
    steps_a: int
    steps_b: int
    curve_a: Curve = field(default_factory=Curve)
    curve_b: Curve = field(default_factory=Curve)
    spread: Spread | None = None
    where: Where | None = None  # the first tensor that differs, where both runs watched it
    # Replicates were looked for and too few found: no band is known (see ``spread``).
    no_band: bool = False
    # Logged once, at the end of the runs (``compare.summary``): a final value, not a curve, so
    # it never has a first divergence step.
    summary: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "a": json_float(self.a),
            "b": json_float(self.b),
            "abs_diff": json_float(self.abs_diff),
            "rel_diff": json_float(self.rel_diff),
            "equal": self.equal,
            "bitwise_equal": self.bitwise_equal,
            "first_divergence_step": self.first_divergence_step,
            "steps_a": self.steps_a,
            "steps_b": self.steps_b,
            "first_divergence": {
                "step": self.first_divergence_step,
                "where": self.where.to_dict() if self.where is not None else None,
            },
            "summary": self.summary,
        }
        if self.spread is not None:
            out["replicates"] = self.spread.to_dict()
        elif self.no_band:
            out["replicates"] = None
        return out


def within_noise(metrics: Sequence[MetricComparison]) -> bool:
    """Every metric that differs has a band from replicates and lies within it: nothing shows
    that the fingerprint differences did more than a rerun of one recipe does."""
    differing = [m for m in metrics if not m.equal]
    return bool(differing) and all(m.spread is not None and not m.spread.outside for m in differing)


@dataclass(frozen=True)
class Report:
    verdict: Verdict
    a: RunRef
    b: RunRef
    differences: tuple[Difference, ...] = ()
    enablers: tuple[Enabler, ...] = ()
    metrics: tuple[MetricComparison, ...] = ()
    notes: tuple[str, ...] = ()
    atol: float = 0.0
    rtol: float = 0.0
    # The metrics differ by no more than replicates of the same recipe differ among themselves:
    # the differences are not shown to matter (``replicates.within_noise``).
    within_noise: bool = False

    def __post_init__(self) -> None:
        check(self.verdict, VERDICTS, "verdict")

    @property
    def effective_differences(self) -> tuple[Difference, ...]:
        """Differences that can change results (effect other than ``none``)."""
        return tuple(d for d in self.differences if d.effect != "none")

    def shown_differences(self, include_none: bool = False) -> tuple[Difference, ...]:
        return self.differences if include_none else self.effective_differences

    @property
    def exit_code(self) -> int:
        """0 when nothing that matters differs and the shared metrics agree, else 1 (diff(1))."""
        same_metrics = self.verdict in ("same_results", "no_metrics")
        return EXIT_SAME if same_metrics and not self.effective_differences else EXIT_DIFFER

    def to_dict(self, include_none: bool = False) -> dict[str, Any]:
        """The JSON contract; ``include_none`` adds the differences that change nothing."""
        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "differences": [d.to_dict() for d in self.shown_differences(include_none)],
            "hidden_differences": len(self.differences) - len(self.shown_differences(include_none)),
            "enablers": [e.to_dict() for e in self.enablers],
            "metrics": [m.to_dict() for m in self.metrics],
            "tolerance": {"atol": self.atol, "rtol": self.rtol},
            "within_noise": self.within_noise,
            "notes": list(self.notes),
        }
