"""What a rule is, where its claim can be checked, and how a field path finds its rule.

A ``Rule`` names a field (or a family: ``*`` matches one segment, and a pattern matches everything
below it), the effect a difference there has by default, one sentence saying why, a ``Source``, a
``prior`` (how likely a cause it is inside its effect class: 3 likely, 1 unlikely) and a
``priority`` (the tie-break after class and prior: lower ranks first). An optional ``condition``
reads both records and may replace the default (``compare/conditions.py``).

Every value is checked when the rule is built, so a misspelt effect or a malformed citation fails
when its subject module is imported, never in the middle of a diff.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...model.declarations import declared
from ...model.vocabulary import EFFECTS, Effect, check
from ..citations import Source
from ..conditions import Condition

PRIORS = (1, 2, 3)


@dataclass(frozen=True)
class Rule:
    pattern: str  # dotted path; ``*`` matches one segment (``nvidia-*`` a prefix); and below it
    effect: Effect
    explanation: str
    source: Source
    prior: int = 2
    condition: Condition | None = None
    priority: int = field(kw_only=True)  # tie-break after effect class and prior: lower first

    def __post_init__(self) -> None:
        check(self.effect, EFFECTS, f"effect of rule {self.pattern!r}")
        if not self.pattern or "" in self.pattern.split("."):
            raise ValueError(f"rule pattern {self.pattern!r} has an empty segment")
        if self.prior not in PRIORS:
            raise ValueError(f"prior of rule {self.pattern!r} must be 1, 2 or 3: {self.prior!r}")
        if isinstance(self.priority, bool) or not isinstance(self.priority, int):
            raise ValueError(f"priority of rule {self.pattern!r} must be an int: {self.priority!r}")
        if not isinstance(self.source, Source):
            raise ValueError(f"source of rule {self.pattern!r} must be a Source")


def declared_rule(
    path: str,
    explanation: str,
    source: Source,
    prior: int = 2,
    condition: Condition | None = None,
    *,
    priority: int,
) -> Rule:
    """The rule of a field declared in ``model/declarations.py``: its effect is the declaration's,
    so it is spelt once; ValueError where ``path`` is not declared."""
    effect = declared(path).effect
    return Rule(path, effect, explanation, source, prior, condition, priority=priority)


@dataclass(frozen=True)
class Classification:
    """What one field difference does, and why: the rule's, or its condition's, verdict."""

    effect: Effect
    explanation: str
    source: Source
    prior: int
    priority: int  # the rule's: the tie-break after class and prior

    def __post_init__(self) -> None:
        check(self.effect, EFFECTS, "effect")


def parts(pattern: str) -> tuple[str, ...]:
    return tuple(pattern.split("."))


def matches(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """``pattern`` names ``path`` or a field above it; ``*`` (or ``prefix*``) is one segment."""
    if len(pattern) > len(path):
        return False
    return all(
        p == seg or (p.endswith("*") and seg.startswith(p[:-1]))
        for p, seg in zip(pattern, path, strict=False)
    )


def most_specific(rules: Iterable[Rule], path: str) -> Rule | None:
    """The rule for ``path``: most segments, then fewest wildcards, then lowest priority."""
    segments = parts(path)
    best: tuple[tuple[int, int, int], Rule] | None = None
    for rule in rules:
        pattern = parts(rule.pattern)
        if matches(pattern, segments):
            score = (len(pattern), -sum("*" in p for p in pattern), -rule.priority)
            if best is None or score > best[0]:
                best = (score, rule)
    return best[1] if best else None
