"""One rule per fingerprint field or family: what a difference there can do to the numbers.

Effect classes (docs/design.md, Comparator; ``model/vocabulary.py``):

- ``recipe``: a different training procedure;
- ``randomness``: a different random stream;
- ``numerics``: the same math through different kernels, reduction order or precision;
- ``none``: recorded, but it does not change results.

The rules live in one module per subject (``gpu``, ``cuda_torch``, ``numerics``, ``determinism``,
``seeds``, ``data``, ``recipe``, ``program``, ``distributed``, ``platform``, ``tensorflow``), each
a ``RULES`` tuple; ``base`` holds the ``Rule`` type and the lookup; ``compare/citations.py`` the
``Source`` type and the public pages and knowledge-base rows the rules cite
(``mlflow_fingerprint/knowledge/determinism.md``, shipped in the package;
``tests/unit/compare/rules/test_rules.py`` fails if a cited row disappears).

A field path takes its most specific rule (most segments, then fewest wildcards). Among the
differences of one effect class, a more likely cause (``prior``) ranks first, then the lower
``priority``: a number per rule, unique across subjects, in steps of 10 ordered by how often each
is the answer in practice. A field no rule names falls back to the hash group it is in, so a field
added to the record later is still ranked sensibly rather than silently hidden.

Adding a subject (say ``program`` for ``program.*`` fields): write ``rules/program.py`` with a
``RULES: tuple[Rule, ...]`` (cite a ``compare/citations.py`` constant or add one there, and a row
to the knowledge base for a claim of our own), give each rule a free ``priority`` (between the
rules it should follow and precede), and add the module to ``SUBJECTS`` below. Import fails on
a duplicate pattern or priority, an unknown effect or a malformed citation.

A field declared in ``model/declarations.py`` (a tagged field, or one added that way) gets its rule
through ``declared_rule``, which takes the effect from the declaration; a ``Source`` that only this
rule cites may be written in the rule itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from ...model.declarations import BY_PATH
from ...model.hashing import GROUPS, VOLATILE
from ...model.vocabulary import EFFECTS, Effect
from ..citations import HASH_GROUP, Source
from ..conditions import Context, Outcome
from ..fields import FieldChange
from . import (
    cuda_torch,
    data,
    determinism,
    distributed,
    gpu,
    numerics,
    platform,
    program,
    recipe,
    seeds,
    tensorflow,
)
from .base import Classification, Rule, declared_rule, matches, most_specific, parts

SUBJECTS = (
    program,
    recipe,
    seeds,
    data,
    distributed,
    gpu,
    cuda_torch,
    numerics,
    determinism,
    platform,
    tensorflow,
)


def _collect(every: Iterable[Rule]) -> tuple[Rule, ...]:
    """Every subject's rules, by priority; a pattern or priority used twice is a bug, and so is a
    rule for a declared field (``model/declarations.py``) whose effect is not the declared one."""
    rules = sorted(every, key=lambda r: r.priority)
    for rule in rules:
        field = BY_PATH.get(rule.pattern)
        if field is not None and rule.effect != field.effect:
            raise ValueError(
                f"rule {rule.pattern!r} says {rule.effect!r}; its declaration says "
                f"{field.effect!r}: write it with declared_rule"
            )
    for kind, values in (
        ("pattern", Counter(rule.pattern for rule in rules)),
        ("priority", Counter(str(rule.priority) for rule in rules)),
    ):
        twice = sorted(value for value, n in values.items() if n > 1)
        if twice:
            raise ValueError(f"rule {kind} used twice: {', '.join(twice)}")
    return tuple(rules)


RULES: tuple[Rule, ...] = _collect(rule for subject in SUBJECTS for rule in subject.RULES)
# Where a field no rule names ranks: after every rule of its class and prior.
FALLBACK_PRIORITY = RULES[-1].priority + 10

__all__ = [
    "EFFECTS",
    "RULES",
    "SUBJECTS",
    "Classification",
    "Rule",
    "Source",
    "classify",
    "declared_rule",
    "rule_for",
]


@cache
def rule_for(path: str) -> Rule | None:
    """The most specific rule for ``path`` (None: no rule names it)."""
    return most_specific(RULES, path)


def _is_volatile(path: str) -> bool:
    return any(matches(parts(v), parts(path)) for v in VOLATILE)


def _fallback(path: str) -> Classification:
    """A field no rule names: classify it by the hash group it feeds."""
    if _is_volatile(path):
        return Classification(
            "none", "A volatile field, kept out of every hash.", HASH_GROUP, 1, FALLBACK_PRIORITY
        )
    for group, roots in GROUPS.items():
        if any(matches(parts(root), parts(path)) for root in roots):
            effect: Effect = "recipe" if group == "recipe" else "numerics"
            return Classification(
                effect,
                f"No specific rule for this field; it is part of the {group} hash, so it "
                f"is counted as a possible {effect} difference.",
                HASH_GROUP,
                1,
                FALLBACK_PRIORITY,
            )
    return Classification("none", "Not part of any hash.", HASH_GROUP, 1, FALLBACK_PRIORITY)


def classify(change: FieldChange, a: Mapping[str, Any], b: Mapping[str, Any]) -> Classification:
    """Effect, explanation and source of one field difference between records ``a`` and ``b``."""
    rule = rule_for(change.path)
    if rule is None:
        return _fallback(change.path)
    outcome: Outcome | None = None
    if rule.condition is not None:
        outcome = rule.condition(Context(change, a, b))
    if outcome is None:
        return Classification(rule.effect, rule.explanation, rule.source, rule.prior, rule.priority)
    prior = outcome.prior if outcome.prior is not None else rule.prior
    return Classification(outcome.effect, outcome.explanation, rule.source, prior, rule.priority)
