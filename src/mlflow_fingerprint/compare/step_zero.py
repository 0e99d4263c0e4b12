"""Why step 0 differs, reasoned from what each run's first step was measured to start from
(``first_step``: the initial weights' digest, the first batch's digest, and whether the
generators had been drawn from before seeding).

- Initial weights that differ, drawn before the seed was set (a model built at module level,
  above ``fingerprinted(seed=0)``): that is why step 0 differs, and the fix is to seed first.
- Equal initial weights and an equal first batch, yet the first logged value differs: the forward
  computation differs (kernels, TF32, threads, library versions); seeds and data are ruled out.
- A setting that acts only through updates (learning rate, momentum, weight decay, optimizer,
  gradient clipping, scheduler, accumulation) never explains a difference at step 0: what made
  step 0 differ comes first, the update setting after it, for the later steps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model.fields import (
    FIRST_STEP_BATCH_DIGEST,
    FIRST_STEP_BEFORE_SEEDING,
    FIRST_STEP_WEIGHTS_DIGEST,
    PROGRAM_CALL,
    PROGRAM_OPTIONS,
    SEEDS_REQUESTED,
)
from ..model.fingerprint import get_path
from . import citations as cite
from .curves import difference_acts_from_step_0
from .facts import made_before_seeding, weights_drawn_unseeded
from .report import Difference, Enabler, MetricComparison

Record = Mapping[str, Any]

# Option names (``-`` read as ``_``) of settings that act only through the optimizer's updates.
UPDATE_ONLY: frozenset[str] = frozenset(
    {
        *("lr", "learning_rate", "base_lr", "max_lr", "min_lr", "lr_decay"),
        *("momentum", "nesterov", "weight_decay", "wd", "betas", "beta1", "beta2"),
        *("optimizer", "optim", "opt"),
        *("clip", "grad_clip", "clip_grad", "clip_grad_norm", "max_grad_norm"),
        *("gradient_clip_val", "clip_value"),
        *("scheduler", "lr_scheduler", "sched", "warmup", "warmup_steps", "warmup_epochs"),
        *("warmup_ratio", "milestones", "step_size"),
        *("accumulation", "accumulation_steps", "accum_steps", "grad_accum"),
        *("grad_accum_steps", "gradient_accumulation_steps", "accumulate_grad_batches"),
    }
)
OPTION_PREFIXES = (PROGRAM_OPTIONS.prefix, PROGRAM_CALL.prefix)

WEIGHTS = FIRST_STEP_WEIGHTS_DIGEST
BATCH = FIRST_STEP_BATCH_DIGEST
DRAWN = FIRST_STEP_BEFORE_SEEDING
SEED_FIRST_FIX = (
    "Seed before the model is built: call mfp.seed_everything(0) at the top of the script, "
    "before the model, or build the model inside train()."
)


@dataclass(frozen=True)
class StepZero:
    """The differences and enablers re-read in the light of step 0, the notes that say so, and
    the fields ruled out as causes (measured equal where they act)."""

    differences: tuple[Difference, ...]
    enablers: tuple[Enabler, ...]
    notes: tuple[str, ...] = ()
    ruled: frozenset[str] = frozenset()


def update_only(d: Difference) -> bool:
    """A user's option that acts only through updates (``--lr``, ``--weight-decay``)."""
    if not d.field.startswith(OPTION_PREFIXES):
        return False
    return d.field.rsplit(".", 1)[-1].replace("-", "_").lower() in UPDATE_ONLY


def measured_equal(a: Record, b: Record, digest: str) -> bool | None:
    """Whether both runs measured the same digest at ``digest``; None where either did not."""
    da, db = get_path(a, digest), get_path(b, digest)
    if not isinstance(da, str) or not isinstance(db, str):
        return None
    return da == db


def first_step_parting(metrics: Sequence[MetricComparison]) -> MetricComparison | None:
    """A curve whose first logged value already differs (both runs log from the same step)."""
    for m in metrics:
        if m.equal or m.summary or m.first_divergence_step is None:
            continue
        if not m.curve_a.steps or not m.curve_b.steps:
            continue
        first = m.curve_a.steps[0]
        if m.curve_b.steps[0] == first and m.first_divergence_step <= first:
            return m
    return None


def _drawn_enabler(labels: Sequence[str], seed_words: str, parting: str | None) -> Enabler:
    runs = "both runs" if len(labels) == 2 else f"run {labels[0]}"
    return Enabler(
        DRAWN,
        f"The initial weights differ although the runs were seeded ({seed_words}): in {runs} "
        "torch's generator had already been drawn from when the seed was set, from the seed "
        "torch takes from the OS at start-up, so the model's initial weights were drawn before "
        "seeding and differ from run to run."
        + (f" That is why {parting} differs from its first step." if parting else ""),
        SEED_FIRST_FIX,
    )


def _renumber(ordered: Sequence[Difference]) -> tuple[Difference, ...]:
    return tuple(
        dataclasses.replace(
            d, rank=i, consequences=tuple(dataclasses.replace(c, rank=i) for c in d.consequences)
        )
        for i, d in enumerate(ordered, start=1)
    )


def _cause(
    differences: Sequence[Difference], field: str, a: Record, b: Record, explanation: str
) -> Difference:
    """The measured step-0 cause as a difference (the rule's one, re-worded and promoted)."""
    found = next((d for d in differences if d.field == field), None)
    return Difference(
        field,
        found.a if found is not None else get_path(a, field),
        found.b if found is not None else get_path(b, field),
        "randomness",
        explanation,
        str(cite.FIRST_STEP),
        1,
    )


def _update_later(d: Difference, step: float, cause: str) -> Difference:
    return dataclasses.replace(
        d,
        explanation=(
            f"Acts only through updates, so not why the values differ at step {step:g} "
            f"({cause}); it explains the steps after it. " + d.explanation
        ),
    )


def _forward(
    differences: Sequence[Difference], metric: MetricComparison, step: float
) -> tuple[list[Difference], list[str], frozenset[str]]:
    """Equal weights and first batch: seeds and data are ruled out; the forward pass differs."""
    ruled = frozenset(d.field for d in differences if difference_acts_from_step_0(d))
    prefix = (
        "Ruled out: the initial weights and the first batch were measured equal in both runs, "
        "and this acts only through them. "
    )
    kept = [d for d in differences if d.field not in ruled]
    moved = [
        dataclasses.replace(d, explanation=prefix + d.explanation)
        for d in differences
        if d.field in ruled
    ]
    note = (
        f"The initial weights and the first batch were measured equal in both runs (at the "
        f"first optimizer step), yet {metric.name} differs at step {step:g}: the forward "
        "computation differs (kernels, TF32, thread counts, library versions). Seeds and data "
        "are ruled out."
    )
    return [*kept, *moved], [note], ruled


def _seed_words(a: Record, b: Record) -> str:
    seeds = [get_path(r, SEEDS_REQUESTED) for r in (a, b)]
    return f"seed {seeds[0]}" if seeds[0] == seeds[1] else f"seeds {seeds[0]} and {seeds[1]}"


def reason(
    a: Record,
    b: Record,
    differences: Sequence[Difference],
    enablers: Sequence[Enabler],
    metrics: Sequence[MetricComparison],
) -> StepZero:
    """The report's differences, enablers and notes, given what step 0 was measured to be."""
    weights = measured_equal(a, b, WEIGHTS)
    batch = measured_equal(a, b, BATCH)
    # with other seeds the initial weights differ whenever they were drawn: the seed explains
    # them, unless the parameters were measured to be made before the seed
    same_seed = get_path(a, SEEDS_REQUESTED) == get_path(b, SEEDS_REQUESTED)
    drawn = [
        label
        for label, r in (("A", a), ("B", b))
        if weights_drawn_unseeded(r) and (same_seed or made_before_seeding(r) is True)
    ]
    parting = first_step_parting(metrics)
    out_enablers = list(enablers)
    lead_notes: tuple[str, ...] = ()
    if weights is False and drawn:
        name = parting.name if parting is not None else None
        out_enablers.insert(0, _drawn_enabler(drawn, _seed_words(a, b), name))
        lead_notes = (f"initial weights drawn before the seed was set: {SEED_FIRST_FIX}",)
    found = _step_zero(a, b, differences, out_enablers, parting, weights, batch, drawn)
    return dataclasses.replace(found, notes=(*lead_notes, *found.notes))


def _step_zero(
    a: Record,
    b: Record,
    differences: Sequence[Difference],
    out_enablers: Sequence[Enabler],
    parting: MetricComparison | None,
    weights: bool | None,
    batch: bool | None,
    drawn: Sequence[str],
) -> StepZero:
    """The differences re-ranked where a curve parts at its first step."""
    if parting is None:
        return StepZero(tuple(differences), tuple(out_enablers))
    step = parting.curve_a.steps[0]
    effective = [d for d in differences if d.effect != "none"]
    updates = [d for d in effective if update_only(d)]
    if weights is True and batch is True and not updates:
        ordered, notes, ruled = _forward(differences, parting, step)
        return StepZero(_renumber(ordered), tuple(out_enablers), tuple(notes), ruled)
    if not updates:
        return StepZero(tuple(differences), tuple(out_enablers))
    others = [d for d in effective if not update_only(d)]
    rest = [d for d in differences if d.effect == "none"]
    if others:
        cause_words = f"{others[0].field} acts from the first step"
        lead: list[Difference] = others
    elif weights is False:
        cause_words = "the initial weights differ"
        lead = [
            _cause(
                differences,
                WEIGHTS,
                a,
                b,
                "The initial weights differ (measured at the first optimizer step)"
                + (
                    ": they were drawn before the seed was set, so each run starts from other "
                    "weights. " + SEED_FIRST_FIX
                    if drawn
                    else ": each run starts from other weights."
                )
                + f" That is why step {step:g} differs.",
            )
        ]
    elif batch is False:
        cause_words = "the first batch differs"
        lead = [
            _cause(
                differences,
                BATCH,
                a,
                b,
                "The first batch the training consumed differs (measured as the loader yielded "
                f"it): step {step:g} is computed on other samples.",
            )
        ]
    else:  # not measured, or measured equal: nothing recorded says what made step 0 differ
        note = (
            f"{parting.name} differs from step {step:g}, before any update could apply "
            f"{', '.join(d.field for d in updates)}; what made the first step differ is not "
            "recorded (an older record without first_step, or a value logged after an update)."
        )
        ordered = [*updates, *rest]
        return StepZero(_renumber(ordered), tuple(out_enablers), (note,))
    lead_fields = {d.field for d in lead}
    ordered = [
        *lead,
        *(_update_later(d, step, cause_words) for d in updates),
        *(d for d in rest if d.field not in lead_fields),
    ]
    return StepZero(_renumber(ordered), tuple(out_enablers))
