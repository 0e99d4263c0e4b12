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

Where reruns can run side by side (``width`` of them, ``--jobs``), the splits are chosen for
rounds rather than for reruns: the candidates are cut into ``width + 1`` parts, ``width`` of them
rerun at once and the last inferred where none moves, so one cause among k takes about
log(k) / log(width + 1) rounds; a round of candidates no wider than ``width`` tests each alone.
With ``width`` 1 this is the halving above, rerun for rerun.
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
# Several sets at once, answered in their order (one round of reruns side by side).
Attempts = Callable[[Sequence[Sequence[Knob]]], list[Match]]


@dataclass
class Search:
    """The state of one search: every attempt is remembered, so no set is rerun twice.
    ``together`` and ``width``: how many sets one round can rerun side by side, and how."""

    attempt: Attempt
    seen: dict[frozenset[Knob], Match] = field(default_factory=dict)
    together: Attempts | None = None
    width: int = 1
    # Places of the next round already taken (the baseline rerun beside the first split).
    taken: int = 0

    def __call__(self, knobs: Sequence[Knob]) -> Match:
        key = frozenset(knobs)
        if key not in self.seen:
            self.seen[key] = self.attempt(list(knobs))
        return self.seen[key]

    def ask(self, sets: Sequence[Sequence[Knob]]) -> list[Match]:
        """Each set's answer; those not seen yet rerun in one round where ``together`` can."""
        new: dict[frozenset[Knob], list[Knob]] = {}
        for knobs in sets:
            if frozenset(knobs) not in self.seen:
                new.setdefault(frozenset(knobs), list(knobs))
        if self.together is not None and len(new) > 1:
            answers = self.together(list(new.values()))
            self.seen.update(zip(new, answers, strict=True))
        return [self(knobs) for knobs in sets]


def parts(candidates: Sequence[Knob], width: int) -> list[list[Knob]]:
    """One round's split: each candidate alone where they fit in ``width``, else ``width + 1``
    parts of near-equal size (the smaller first, as halving took the smaller half)."""
    n = len(candidates)
    if width > 1 and n <= width:
        return [[k] for k in candidates]
    count = min(n, width + 1)
    sizes = [n // count + (1 if i >= count - n % count else 0) for i in range(count)]
    out, start = [], 0
    for size in sizes:
        out.append(list(candidates[start : start + size]))
        start += size
    return out


def first_round(knobs: Sequence[Knob], width: int) -> list[list[Knob]]:
    """The sets the search's first round reruns beside one other rerun (A as recorded): what
    :func:`find_causes` asks first with one place of ``width`` taken (:attr:`Search.taken`)."""
    if width < 2 or len(knobs) < 2:
        return []
    return tested(parts(knobs, width - 1), width - 1)


def tested(split: list[list[Knob]], width: int) -> list[list[Knob]]:
    """The parts of ``split`` a round reruns: all where they fit, else all but the last, which
    is inferred from the others keeping A's curve."""
    return split if len(split) <= width and width > 1 else split[:-1]


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
    """One cause assumed: apply a part (half, where reruns run one at a time); a part that leaves
    A's curve holds it, one that keeps A's curve is ruled out; where every part tested kept it,
    the one left untested holds it."""
    seen = False
    while len(candidates) > 1:
        width, search.taken = max(1, search.width - search.taken), 0
        split = parts(candidates, width)
        asked = tested(split, width)
        moving = [p for p, m in zip(asked, search.ask(asked), strict=True) if moves(m)]
        if moving:
            seen, candidates = True, moving[0]
        elif len(asked) == len(split):
            return Halving(None, False)  # each alone tested, and none moves A's curve
        else:
            candidates = split[-1]
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
        if suspect is not None and search.width > 1:
            # The settling reruns in one round: the suspect alone, the rest without it.
            rest = [k for k in remaining if k != suspect and k not in ruled_out(search)]
            search.ask([[suspect]] * (not halving.seen_moving) + [rest] * bool(rest))
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
