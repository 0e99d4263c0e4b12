"""Seeds and random state: the seed asked for, the seed torch drew, PYTHONHASHSEED, RNG digests."""

from __future__ import annotations

from .. import citations as cite
from .. import conditions as cond
from .base import Rule, declared_rule

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
    Rule(
        "seeds.captured_at_stage",
        "none",
        "When the RNG states were read.",
        cite.NOT_ARITHMETIC,
        priority=290,
    ),
)
