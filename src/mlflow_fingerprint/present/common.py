"""Words and number formats every output format shares, so text, markdown and HTML agree."""

from __future__ import annotations

import json
import math
from typing import Any

from ..compare.report import Difference, MetricComparison, Report, Spread
from ..model.fields import PARAMS, PROGRAM_CALL, PROGRAM_OPTIONS
from ..model.fingerprint import is_unavailable
from ..model.missing import MISSING
from ..wrap import shorten

MAX_VALUE_CHARS = 60


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def verdict_sentence(report: Report) -> str:
    """One sentence a person reads first: what happened and where to look."""
    effective = report.effective_differences
    top = f" most likely {effective[0].field}." if effective else ""
    if report.verdict == "same_results":
        tail = (
            f" The fingerprints differ in {plural(len(effective), 'setting')} that can change "
            "results, which did not change them here."
            if effective
            else ""
        )
        return f"The shared metrics are equal.{tail}"
    if report.verdict == "explained":
        return (
            f"The metrics differ, and the fingerprints differ in "
            f"{plural(len(effective), 'setting')} that can change results:{top}"
        )
    if report.verdict == "nondeterministic" and report.within_noise:
        return (
            "The metrics differ, but by no more than replicate runs of the same recipe differ "
            "from each other: run-to-run variation, not shown to come from what differs."
        )
    if report.verdict == "nondeterministic":
        return (
            "The metrics differ although the fingerprints are equivalent; both runs allow "
            "run-to-run variation (see enablers)."
        )
    if report.verdict == "unexplained":
        return (
            "The metrics differ, the fingerprints are equivalent and nothing recorded allows "
            "run-to-run variation."
        )
    if effective:
        return (
            f"No metrics compared; {plural(len(effective), 'difference')} can change results:{top}"
        )
    return "No metrics compared; nothing that can change results differs."


def value_text(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """A field value as a person reads it: absent, unavailable, or JSON-ish, shortened."""
    if value is MISSING:
        return "absent"
    if is_unavailable(value):
        reason = value.get("unavailable")
        return (
            "unknown" if isinstance(reason, str) and reason.startswith("unknown") else "unavailable"
        )
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return shorten(text, limit)


def number(value: float | None) -> str:
    """Metric values: up to 8 significant digits, exact where short."""
    if value is None:
        return "—"
    if math.isnan(value):
        return "nan"
    return f"{value:.8g}"


def percent(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "—"
    return f"{value * 100:.3g}%"


def divergence_text(metric: MetricComparison) -> str:
    if metric.summary:
        return "summary (logged at the end)"
    if metric.first_divergence_step is None:
        return "none"
    return f"step {metric.first_divergence_step}"


def equal_text(metric: MetricComparison) -> str:
    if metric.bitwise_equal:
        return "bitwise"
    return "within tol" if metric.equal else "no"


def spread_text(metric: MetricComparison) -> str:
    """The noise column: where the A–B gap lies against replicates of the same recipe, on how
    many runs that rests, and where replicates part; "no band known" where too few exist."""
    s = metric.spread
    if s is None:
        return "no band known (fewer than 2 replicate runs)" if metric.no_band else ""
    where = "outside" if s.outside else "within"
    parts = f", part at step {s.parts_at}" if s.parts_at is not None else ", bitwise equal"
    return f"{where} {band_name(s)} (band {number(s.band)} from {band_runs(s)}{parts})"


def band_name(spread: Spread) -> str:
    """Which band the pair was judged against: its own seed's reruns, or seed to seed."""
    if spread.seed is not None:
        return f"run-to-run noise at seed {spread.seed}"
    return "seed-to-seed spread"


def band_runs(spread: Spread) -> str:
    """The runs the band rests on, with the seeds they had."""
    runs = plural(spread.runs, "replicate run")
    if spread.seed is not None:
        return f"{runs} seeded with {spread.seed}"
    return f"{runs} of different seeds"


def differences_title(report: Report) -> str:
    """Within the noise of replicates, the differences are what differs, not likely causes."""
    if report.within_noise:
        return "Differences (within run-to-run noise: not shown to have changed the metrics)"
    return "Differences, most likely cause first"


def difference_rows(
    report: Report, include_none: bool = False
) -> list[tuple[str, str, Difference]]:
    """(rank, field, difference) for every shown difference, each followed by the fields it
    set (its consequences; those that change nothing only with ``include_none``), marked ``↳``
    and unnumbered: one change is one numbered row."""
    rows = []
    for d in report.shown_differences(include_none):
        rows.append((str(d.rank), d.field, d))
        rows += [
            ("", f"↳ {c.field}", c) for c in d.consequences if include_none or c.effect != "none"
        ]
    return rows


SETTINGS = (PROGRAM_OPTIONS.prefix, PROGRAM_CALL.prefix, PARAMS.prefix)


def says_more_than_its_consequences(d: Difference) -> bool:
    """A change whose own words lead its consequences': an edited copy of the script (the entry
    point) says what was run, where an option's words only repeat the values its consequences
    show."""
    return bool(d.consequences) and not d.field.startswith(SETTINGS)


def metric_cells(metric: MetricComparison) -> tuple[str, ...]:
    """One metric's row as every table shows it: name, A, B, |Δ|, rel, equal, divergence, noise."""
    return (
        metric.name,
        number(metric.a),
        number(metric.b),
        number(metric.abs_diff),
        percent(metric.rel_diff),
        equal_text(metric),
        divergence_text(metric),
        spread_text(metric),
    )


WHERE_HEADER = ("phase", "tensor", "type", "equal", "rel diff of norms")


def located(report: Report) -> list[MetricComparison]:
    """The metrics whose parting curves ``mfp.watch`` traced to a tensor."""
    return [m for m in report.metrics if m.where is not None]


def where_line(metric: MetricComparison) -> str:
    """'loss parts at step 21: step 20, optimizer: features.0.weight (Conv2d) differs; ...'."""
    assert metric.where is not None
    return f"{metric.name} parts at {divergence_text(metric)}: {metric.where.sentence()}"


def around_cells(metric: MetricComparison) -> list[tuple[str, ...]]:
    """The table of the tensors around the first difference: phase, tensor, type, equal, rel."""
    assert metric.where is not None
    return [
        (
            n.phase,
            n.name,
            n.kind,
            "yes" if n.equal else "no",
            f"{n.rel_diff:.3g}" if n.rel_diff is not None else "—",
        )
        for n in metric.where.around
    ]


def hidden_line(report: Report, include_none: bool) -> str | None:
    hidden = len(report.differences) - len(report.shown_differences(include_none))
    if not hidden:
        return None
    return f"{plural(hidden, 'difference')} that change nothing hidden; --all shows them."


def show_enablers(report: Report, include_none: bool) -> bool:
    """Enablers answer "why then?" when nothing that matters differs; --all shows them always."""
    return bool(report.enablers) and (include_none or not report.effective_differences)
