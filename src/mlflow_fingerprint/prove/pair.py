"""What a bisect reads before it reruns anything: the two runs, the metrics they share and the
step where their curves part, their differences sorted by what a rerun can do about them, and
whether this machine can stand for A at all. A dry run stops here and says what it would run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compare.diff import shared_metric_names
from ..compare.report import Difference
from ..compare.settable import Knob, Split, split
from ..errors import UsageError
from ..model.fields import PACKAGES_DIGEST, PROGRAM_SOURCES_FILES
from .curves import Metrics, parted_at, read, summary_differs
from .launch import Plan, launch_for, overrides_of, shown
from .options import Reruns
from .recorded import Recorded, differences, machine_gaps, recorded
from .reproduce import code_note
from .results import BisectResult, DryRun

# Steps a rerun runs past the first divergence: enough to see the curves part, no more.
MARGIN = 2


@dataclass(frozen=True)
class Setup:
    """What a bisect reads before rerunning: the runs, the metrics compared and where they part,
    and the differences sorted by what a rerun can do about them."""

    a: Recorded
    b: Recorded
    names: list[str]
    metrics: tuple[Metrics, Metrics]
    parted: int | None
    until: int | None
    differences: tuple[Difference, ...]
    sides: Split


def setup(a: str, b: str, options: Reruns) -> Setup:
    """A and B read from where ``options`` say, with the step their reruns stop at."""
    ra = recorded(a, options.tracking_uri, options.experiment, "A")
    rb = recorded(b, options.tracking_uri, options.experiment, "B")
    until_step = options.until_step
    names = shared_metric_names(ra.resolved, rb.resolved, None)
    if not names:
        raise UsageError("A and B share no metric: there is no curve to bisect")
    whole_a, whole_b = read(ra.uri, ra.run_id, names), read(ra.uri, rb.run_id, names)
    parted = parted_at(whole_a.curves, whole_b.curves)
    if parted is None and not summary_differs(whole_a, whole_b):
        raise UsageError(f"A and B logged the same values of {', '.join(names)}: nothing to bisect")
    # Where only the summaries differ, the reruns run to their end to log them.
    until = until_step if until_step is not None else (None if parted is None else parted + MARGIN)
    found = differences(ra.record, rb.record)
    return Setup(ra, rb, names, (whole_a, whole_b), parted, until, found, split(found))


def not_here(a: Recorded, b: Recorded, until: int | None, sides: Split) -> BisectResult | None:
    """Where this machine is not A's in what a rerun cannot set, no rerun here stands for A:
    the result says so without rerunning anything. Its packages are no such gap: a bisect's
    reruns run with A's versions (``package_sets``)."""
    gaps = [d for d in machine_gaps(a.record) if d.field != PACKAGES_DIGEST]
    if not gaps:
        return None
    fields = list(dict.fromkeys([d.field for d in gaps] + [d.field for d in sides.cannot_set]))
    shown_gaps = ", ".join(f"{d.field} (A: {d.a}; here: {d.b})" for d in gaps[:4])
    note = (
        f"this machine differs from A's in what no rerun can set: {shown_gaps}; a rerun here "
        "cannot stand for A, so no cause is claimed. Run the bisect on A's machine."
    )
    return BisectResult(
        "not_settable", a.run_id, b.run_id, until, (), (), tuple(fields), (), (note,)
    )


def planned(s: Setup, origin: Path, bound: float, builds: Sequence[str] = ()) -> DryRun:
    """The reruns a bisect starts with (A as recorded) and ends with at most (A with every
    settable value of B), and what it would set. Files of code are taken from the records here;
    the bisect itself compares the two checked-out trees."""
    recorded_code = [
        Knob(
            "code", d.field.removeprefix(PROGRAM_SOURCES_FILES.prefix), d.field, d.a, d.b, "recipe"
        )
        for d in s.differences
        if d.field.startswith(PROGRAM_SOURCES_FILES.prefix) and d.effect != "none"
    ]
    knobs = [*s.sides.knobs, *recorded_code]
    watch = (s.parted,) if s.parted is not None else ()

    def describe(chosen: Sequence[Knob]) -> Mapping[str, Any]:
        launch = launch_for(
            s.a.recipe,
            Plan.of(chosen),
            stop_after=s.until,
            watch_steps=watch,
            timeout_s=bound,
            overrides=overrides_of(chosen),
        )
        return launch.describe(s.a.uri)

    settable = tuple(
        {"field": k.field, "a": k.a, "b": shown({k.field: k.b}).values[k.field], "how": k.kind}
        for k in knobs
    )
    launches: list[tuple[str, Mapping[str, Any]]] = [
        ("the first rerun: A as recorded", describe([]))
    ]
    if knobs:
        launches.append(("the largest rerun: A with every settable value of B", describe(knobs)))
    return DryRun(
        "bisect",
        (s.a.run_id, s.b.run_id),
        tuple(launches),
        settable,
        tuple(d.field for d in s.sides.cannot_set),
        (code_note(s.a, origin), *builds),
        s.until,
    )
