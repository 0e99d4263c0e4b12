"""The bisect's search: which of B's settable values turn A's curve into B's, as a pure
function of the knobs and of ``attempt``.

``attempt`` reruns A with a set of knobs switched to B's values and says whose curve the rerun
followed (``a``, ``b`` or ``neither``); how a rerun is made is not this module's business. That
keeps the search a plain function that unit tests drive with an oracle and a recorded replay
drives with real answers (docs/design.md, "Controlled reruns").

One cause among k knobs costs at most ceil(log2 k) + 2 reruns: the baseline, one per halving,
and one that settles the suspect (applied alone where the halving only inferred it, else all the
other knobs applied without it, which rules them out at once). Causes that move the numbers only
together fall back to testing both halves: more reruns, still a set that alone moves A's curve.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..compare.settable import Knob
from ..model.vocabulary import Match
from .results import Cause, Rerun

# A bound on the fallback's reruns, whatever the knobs do together.
MAX_FALLBACK_RERUNS = 24


Attempt = Callable[[Sequence[Knob]], Match]


@dataclass
class Search:
    """The state of one search: every attempt is remembered, so no set is rerun twice."""

    attempt: Attempt
    seen: dict[frozenset[Knob], Match] = field(default_factory=dict)

    def __call__(self, knobs: Sequence[Knob]) -> Match:
        key = frozenset(knobs)
        if key not in self.seen:
            self.seen[key] = self.attempt(list(knobs))
        return self.seen[key]


def moves(match: Match) -> bool:
    """A rerun that left A's curve: what the knobs it set can do. Leaving A's curve, not landing
    on B's, is the signal: where B's own setting makes runs vary (deterministic mode off), no
    rerun lands on B's curve bit for bit, yet the setting still moves A's."""
    return match != "a"


@dataclass(frozen=True)
class Halving:
    """Where halving ended: the suspect, and whether a rerun that held it left A's curve (else
    it was only inferred, by every other half keeping A's)."""

    suspect: Knob | None
    seen_moving: bool


def _halve(candidates: list[Knob], search: Search) -> Halving:
    """One cause assumed: apply half; a half that leaves A's curve holds it, one that keeps A's
    curve is ruled out."""
    seen = False
    while len(candidates) > 1:
        half, rest = candidates[: len(candidates) // 2], candidates[len(candidates) // 2 :]
        moved = moves(search(half))
        seen = seen or moved
        candidates = half if moved else rest
    return Halving(candidates[0] if candidates else None, seen)


def _minimal(candidates: list[Knob], base: list[Knob], search: Search) -> list[Knob]:
    """The smallest part of ``candidates`` that, with ``base``, still leaves A's curve (``base``
    + ``candidates`` is known to): both halves tested; where neither alone does, each is
    narrowed with the other applied."""
    if len(candidates) == 1 or len(search.seen) >= MAX_FALLBACK_RERUNS:
        return candidates
    half, rest = candidates[: len(candidates) // 2], candidates[len(candidates) // 2 :]
    if moves(search(base + half)):
        return _minimal(half, base, search)
    if moves(search(base + rest)):
        return _minimal(rest, base, search)
    first = _minimal(half, base + rest, search)
    return first + _minimal(rest, base + first, search)


def ruled_out(search: Search) -> set[Knob]:
    """Every knob applied in a rerun that kept A's curve: alone it changes nothing."""
    return {k for knobs, match in search.seen.items() if match == "a" for k in knobs}


def find_causes(knobs: Sequence[Knob], search: Search) -> list[Knob] | None:
    """The knobs that move A's curve; None where not even all of them together do (what moved
    B's numbers cannot be set here, or lies outside the record).

    Halving names a suspect; one more rerun then settles it: where the suspect was only
    inferred, it is applied alone; otherwise every knob not yet ruled out is applied without it,
    which must keep A's curve. Where that rerun leaves A's curve too, another knob moves the
    numbers as well (one setting reached two ways, say): it is searched for among those.
    Without knobs there is nothing to find: None, never an empty list of causes."""
    if not knobs:
        return None
    remaining = list(knobs)
    causes: list[Knob] = []
    while remaining:
        halving = _halve(remaining, search)
        suspect = halving.suspect
        if suspect is None or (not halving.seen_moving and not moves(search([suspect]))):
            return causes or _fallback(list(knobs), search)
        causes.append(suspect)
        rest = [k for k in remaining if k != suspect and k not in ruled_out(search)]
        if not rest or not moves(search(rest)):
            break
        remaining = rest
    return causes


def _fallback(knobs: list[Knob], search: Search) -> list[Knob] | None:
    """Causes that act only together: the smallest set that leaves A's curve, if all knobs do."""
    if not moves(search(knobs)):
        return None
    return _minimal(knobs, [], search)


@dataclass(frozen=True)
class Conclusion:
    causes: tuple[Cause, ...]
    ruled_out: tuple[str, ...]
    untested: tuple[str, ...]


def conclude(causes: Sequence[Knob], knobs: Sequence[Knob], reruns: Sequence[Rerun]) -> Conclusion:
    """What the reruns showed: each cause with the settings it changed (as the smallest rerun
    that followed B's curve with it shows), every knob whose B value was in effect in a rerun
    that still followed A's curve (ruled out), and the knobs no rerun settled."""
    ruled = {f for r in reruns if r.matches == "a" for f in r.in_effect}
    fields = [k.field for k in knobs]
    found: list[Cause] = []
    for c in causes:
        with_it = [r for r in reruns if moves(r.matches) and c.field in r.in_effect]
        smallest = min(with_it, key=lambda r: len(r.overrides), default=None)
        sets = (
            ()
            if smallest is None
            else tuple(
                f for f in fields if f in smallest.in_effect and f != c.field and f not in ruled
            )
        )
        found.append(Cause(c.field, c.a, c.b, c.effect, sets))
    explained = {c.field for c in found} | {f for c in found for f in c.sets}
    return Conclusion(
        tuple(found),
        tuple(f for f in fields if f in ruled and f not in explained),
        tuple(f for f in fields if f not in ruled and f not in explained),
    )


def find_switch(switches: Sequence[Knob], reproduces: Callable[[Knob], bool]) -> Knob | None:
    """The first switch (most specific first) under which two reruns of A agree."""
    for switch in switches:
        if reproduces(switch):
            return switch
    return None
