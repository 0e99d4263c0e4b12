"""Seeds and random state: the seed asked for, the seed torch drew, PYTHONHASHSEED, RNG digests,
and what the first step started from (``first_step``: read by ``compare/step_zero.py``)."""

from __future__ import annotations

from .. import citations as cite
from .. import conditions as cond
from .base import Rule, declared_rule

FIRST_STEP_MEASURED = (
    "A measured consequence of the seeds and the recipe: compared to say what made step 0 "
    "differ, never a cause by itself."
)

RULES: tuple[Rule, ...] = (
    declared_rule(
        "seeds.requested",
        "A different seed gives different initial weights, data order, augmentation and dropout.",
        cite.SEED,
        prior=3,
        condition=cond.same_seed,
        priority=20,
    ),
    Rule(
        "seeds.torch_initial_seed",
        "randomness",
        "The initial seed torch drew differs: initial weights, data order and dropout differ.",
        cite.SEED,
        prior=3,
        condition=cond.unseeded,
        priority=90,
    ),
    Rule(
        "seeds.seeded_by",
        "randomness",
        "The RNGs were seeded by different means (or only one run was seeded).",
        cite.OTHER_SEEDS,
        prior=2,
        condition=cond.same_seed,
        priority=100,
    ),
    Rule(
        "seeds.pythonhashseed",
        "randomness",
        "PYTHONHASHSEED changes the iteration order of sets and dicts keyed by strings.",
        cite.PYTHONHASHSEED,
        prior=2,
        priority=260,
    ),
    Rule(
        "seeds.hash_randomization",
        "randomness",
        "String hashing was salted in one run only, which changes set iteration order.",
        cite.PYTHONHASHSEED,
        prior=1,
        priority=270,
    ),
    Rule(
        "seeds.state_digests",
        "none",
        "RNG states read at an arbitrary moment differ with every draw; not a cause by itself.",
        cite.SEED,
        condition=cond.rng_state,
        priority=280,
    ),
    Rule(
        "seeds.at_first_step",
        "none",
        "The RNGs as training started; the seed torch trained from is compared through "
        "seeds.torch_initial_seed and seeds.origin, the states pair by pair for the enablers.",
        cite.SEED,
        priority=282,
    ),
    Rule(
        "seeds.torch_imported_by_program",
        "none",
        "Whether the program imported torch itself or only the capture did; not a cause by itself.",
        cite.NOT_ARITHMETIC,
        priority=285,
    ),
    declared_rule(
        "first_step.before_seeding.torch.drawn",
        "Whether torch's generator had been drawn from when the seed was set: an earlier "
        "training in the process draws too, so it matters only where the initial weights were "
        "drawn then, which the weights' digests measure (compare/step_zero.py).",
        cite.FIRST_STEP,
        priority=283,
    ),
    Rule(
        "first_step.before_seeding",
        "none",
        "Where the generators stood when the seed was set; torch's own draws are compared "
        "through first_step.before_seeding.torch.drawn.",
        cite.FIRST_STEP,
        priority=284,
    ),
    declared_rule("first_step.weights.digest", FIRST_STEP_MEASURED, cite.FIRST_STEP, priority=286),
    declared_rule("first_step.batch.digest", FIRST_STEP_MEASURED, cite.FIRST_STEP, priority=287),
    Rule("first_step", "none", FIRST_STEP_MEASURED, cite.FIRST_STEP, priority=288),
    Rule(
        "seeds.captured_at_stage",
        "none",
        "When the RNG states were read.",
        cite.NOT_ARITHMETIC,
        priority=290,
    ),
)
