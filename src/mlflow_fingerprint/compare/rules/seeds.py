"""Seeds and random state: the seed asked for, the seed torch drew, PYTHONHASHSEED, RNG digests,
and what the first step started from (``first_step``: read by ``compare/step_zero.py``)."""

from __future__ import annotations

from ...model.fields import (
    FIRST_STEP_BATCH_DIGEST,
    FIRST_STEP_BEFORE_SEEDING,
    FIRST_STEP_BEFORE_SEEDING_TORCH_DRAWN,
    FIRST_STEP_WEIGHTS_DIGEST,
    SEEDS_AT_FIRST_STEP,
    SEEDS_CAPTURED_AT_STAGE,
    SEEDS_HASH_RANDOMIZATION,
    SEEDS_PYTHONHASHSEED,
    SEEDS_REQUESTED,
    SEEDS_SEEDED_BY,
    SEEDS_STATE_DIGESTS,
    SEEDS_TORCH_IMPORTED_BY_PROGRAM,
    SEEDS_TORCH_INITIAL_SEED,
)
from .. import citations as cite
from .. import conditions as cond
from .base import Rule, declared_rule

FIRST_STEP_MEASURED = (
    "A measured consequence of the seeds and the recipe: compared to say what made step 0 "
    "differ, never a cause by itself."
)

RULES: tuple[Rule, ...] = (
    declared_rule(
        SEEDS_REQUESTED,
        "A different seed gives different initial weights, data order, augmentation and dropout.",
        cite.SEED,
        prior=3,
        condition=cond.same_seed,
        priority=20,
    ),
    Rule(
        SEEDS_TORCH_INITIAL_SEED,
        "randomness",
        "The initial seed torch drew differs: initial weights, data order and dropout differ.",
        cite.SEED,
        prior=3,
        condition=cond.unseeded,
        priority=90,
    ),
    Rule(
        SEEDS_SEEDED_BY,
        "randomness",
        "The RNGs were seeded by different means (or only one run was seeded).",
        cite.OTHER_SEEDS,
        prior=2,
        condition=cond.same_seed,
        priority=100,
    ),
    Rule(
        SEEDS_PYTHONHASHSEED,
        "randomness",
        "PYTHONHASHSEED changes the iteration order of sets and dicts keyed by strings.",
        cite.PYTHONHASHSEED,
        prior=2,
        priority=260,
    ),
    Rule(
        SEEDS_HASH_RANDOMIZATION,
        "randomness",
        "String hashing was salted in one run only, which changes set iteration order.",
        cite.PYTHONHASHSEED,
        prior=1,
        priority=270,
    ),
    Rule(
        SEEDS_STATE_DIGESTS,
        "none",
        "RNG states read at an arbitrary moment differ with every draw; not a cause by itself.",
        cite.SEED,
        condition=cond.rng_state,
        priority=280,
    ),
    Rule(
        SEEDS_AT_FIRST_STEP,
        "none",
        "The RNGs as training started; the seed torch trained from is compared through "
        "seeds.torch_initial_seed and seeds.origin, the states pair by pair for the enablers.",
        cite.SEED,
        priority=282,
    ),
    Rule(
        SEEDS_TORCH_IMPORTED_BY_PROGRAM,
        "none",
        "Whether the program imported torch itself or only the capture did; not a cause by itself.",
        cite.NOT_ARITHMETIC,
        priority=285,
    ),
    declared_rule(
        FIRST_STEP_BEFORE_SEEDING_TORCH_DRAWN,
        "Whether torch's generator had been drawn from when the seed was set: an earlier "
        "training in the process draws too, so it matters only where the initial weights were "
        "drawn then, which the weights' digests measure (compare/step_zero.py).",
        cite.FIRST_STEP,
        priority=283,
    ),
    Rule(
        FIRST_STEP_BEFORE_SEEDING,
        "none",
        "Where the generators stood when the seed was set; torch's own draws are compared "
        "through first_step.before_seeding.torch.drawn.",
        cite.FIRST_STEP,
        priority=284,
    ),
    declared_rule(FIRST_STEP_WEIGHTS_DIGEST, FIRST_STEP_MEASURED, cite.FIRST_STEP, priority=286),
    declared_rule(FIRST_STEP_BATCH_DIGEST, FIRST_STEP_MEASURED, cite.FIRST_STEP, priority=287),
    Rule("first_step", "none", FIRST_STEP_MEASURED, cite.FIRST_STEP, priority=288),
    Rule(
        SEEDS_CAPTURED_AT_STAGE,
        "none",
        "When the RNG states were read.",
        cite.NOT_ARITHMETIC,
        priority=290,
    ),
)
