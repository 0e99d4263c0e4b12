"""What the curves rule out: a cause that acts from step 0 cannot explain curves that are
identical at their first step and part later (docs/design.md, "Verdicts never contradict the
numbers").

Initial weights, data order, worker streams and seeds all change the very first batch's loss: a
first logged value that is bitwise the same in both runs shows they were the same there. Such a
difference or enabler is kept in the report, ranked last and marked, but never offered as the
cause. Only exact comparisons rule anything out: under a tolerance, "equal" at the first step
may hide a small difference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..model.fields import (
    DATA_DECLARED_BATCH_SIZE,
    DATA_DECLARED_NUM_WORKERS,
    DATA_LOADERS,
    DATA_LOADERS_EACH_BATCH_SIZE,
    DATA_LOADERS_EACH_GENERATOR,
    DATA_LOADERS_EACH_NUM_WORKERS,
    DATA_LOADERS_EACH_SAMPLER,
    DATA_LOADERS_EACH_SHUFFLE,
    DATA_LOADERS_EACH_WORKER_INIT_FN,
    FIRST_STEP_BEFORE_SEEDING,
    SEEDS_AT_FIRST_STEP_STATE_DIGESTS,
    SEEDS_ORIGIN,
    SEEDS_PYTHONHASHSEED,
    SEEDS_REQUESTED,
    SEEDS_SEEDED_BY,
    SEEDS_TORCH_INITIAL_SEED,
)
from .report import Difference, Enabler, MetricComparison

# Fields whose difference changes the first batch's loss (dotted; ``*`` is one list index).
FROM_STEP_0: tuple[str, ...] = (
    SEEDS_REQUESTED,
    SEEDS_SEEDED_BY,
    SEEDS_ORIGIN,
    SEEDS_TORCH_INITIAL_SEED,
    DATA_LOADERS_EACH_BATCH_SIZE,
    DATA_LOADERS_EACH_GENERATOR,
    DATA_LOADERS_EACH_SHUFFLE,
    DATA_LOADERS_EACH_SAMPLER,
    DATA_LOADERS_EACH_WORKER_INIT_FN,
    DATA_LOADERS_EACH_NUM_WORKERS,
    DATA_DECLARED_BATCH_SIZE,
    DATA_DECLARED_NUM_WORKERS,
    FIRST_STEP_BEFORE_SEEDING,  # acts through the initial weights it drew
)


def _matches(pattern: str, path: str) -> bool:
    parts, segments = pattern.split("."), path.split(".")
    if len(parts) > len(segments):
        return False
    return all(p == "*" or p == s for p, s in zip(parts, segments, strict=False))


def acts_from_step_0(field: str) -> bool:
    return any(_matches(pattern, field) for pattern in FROM_STEP_0)


def difference_acts_from_step_0(d: Difference) -> bool:
    """A field acting from step 0, or a change (an option) everything of which that changes
    results does: ``--seed 1`` sets the seeds, which act from step 0."""
    if acts_from_step_0(d.field):
        return True
    effective = [c for c in d.consequences if c.effect != "none"]
    return bool(effective) and all(acts_from_step_0(c.field) for c in effective)


def late_divergence(
    metrics: Sequence[MetricComparison], atol: float, rtol: float
) -> tuple[float, int] | None:
    """(first shared step, first divergence step) where every differing metric is bitwise
    equal at its first logged step and parts later; None where that is not so (or not exact)."""
    if atol or rtol:
        return None
    differing = [m for m in metrics if not m.equal and not m.summary]
    if not differing:
        return None
    found: list[tuple[float, int]] = []
    for m in differing:
        step = m.first_divergence_step
        if step is None or not m.curve_a.steps or not m.curve_b.steps:
            return None
        first = m.curve_a.steps[0]
        if m.curve_b.steps[0] != first or step <= first:
            return None
        found.append((first, step))
    return min(s for s, _ in found), min(d for _, d in found)


def ruled_out_note(first: float, parted: int) -> str:
    return (
        f"The curves are identical at step {first:g} and part at step {parted}: initial "
        "weights, data order, worker streams and seeds act from step 0, so none of them "
        "explains this difference."
    )


def set_aside(
    differences: Sequence[Difference], first: float, parted: int
) -> tuple[tuple[Difference, ...], frozenset[str]]:
    """Differences re-ranked with those acting from step 0 last and marked; and their fields."""
    ruled = frozenset(d.field for d in differences if difference_acts_from_step_0(d))
    if not ruled:
        return tuple(differences), ruled
    prefix = (
        f"Not the cause here: the curves are identical at step {first:g} and part at step "
        f"{parted}, and this acts from step 0. "
    )
    kept = [d for d in differences if d.field not in ruled]
    moved = [
        dataclasses.replace(d, explanation=prefix + d.explanation)
        for d in differences
        if d.field in ruled
    ]
    ordered = [*kept, *moved]
    return tuple(
        dataclasses.replace(
            d,
            rank=i,
            consequences=tuple(dataclasses.replace(c, rank=i) for c in d.consequences),
        )
        for i, d in enumerate(ordered, start=1)
    ), ruled


# Enablers (``enablers.CHECKS``) whose variation shows in the first batch: no seed, generators the
# program left unseeded, workers drawing from unseeded streams, and the order of sets of strings
# (salted hashes), which a program fixes as it sets up (vocabularies, class and file lists).
ENABLERS_FROM_STEP_0 = frozenset(
    {
        SEEDS_REQUESTED,
        SEEDS_AT_FIRST_STEP_STATE_DIGESTS,
        SEEDS_PYTHONHASHSEED,
        DATA_LOADERS,
        FIRST_STEP_BEFORE_SEEDING,
    }
)


def enablers_left(enablers: Sequence[Enabler]) -> tuple[Enabler, ...]:
    """Enablers that could still act after step 0 (GPU kernels, TF32); seeds, workers and the
    order of sets of strings cannot."""
    return tuple(e for e in enablers if e.field not in ENABLERS_FROM_STEP_0)
