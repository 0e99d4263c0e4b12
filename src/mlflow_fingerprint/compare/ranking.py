"""Order field differences by how likely each is to be why the numbers differ.

A field only one run recorded (or whose value is not known in one run) is a possible difference,
never ranked above one both runs measured. Then a recipe or randomness difference changes the
trajectory outright, so it outranks a numerics one (last-bit differences that grow); those
outrank fields that change nothing. Inside a class the rule's prior decides, then the rule's
``priority``, then the field path, so the order is stable from run to run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..model.fingerprint import is_unavailable
from ..model.missing import MISSING
from ..model.vocabulary import Effect
from .fields import FieldChange
from .report import Difference
from .rules import Classification, classify

TIER: dict[Effect, int] = {"recipe": 0, "randomness": 0, "numerics": 1, "none": 2}
UNKNOWN_NOTE = "Only one run recorded this field, so it may not really differ. "


def unknown_side(change: FieldChange) -> bool:
    """One side is absent or unreadable: a possible difference, weaker than a known one."""
    return any(v is MISSING or is_unavailable(v) for v in (change.a, change.b))


def rank(
    changes: Iterable[FieldChange], a: Mapping[str, Any], b: Mapping[str, Any]
) -> tuple[Difference, ...]:
    """Classify every change and number them 1..n, most likely cause first."""
    classified: list[tuple[FieldChange, Classification]] = [(c, classify(c, a, b)) for c in changes]
    classified.sort(
        key=lambda item: (
            item[1].effect == "none",
            unknown_side(item[0]),
            TIER[item[1].effect],
            -item[1].prior,
            item[1].priority,
            item[0].path,
        )
    )
    return tuple(
        Difference(
            field=change.path,
            a=change.a,
            b=change.b,
            effect=cls.effect,
            explanation=(UNKNOWN_NOTE if unknown_side(change) and cls.effect != "none" else "")
            + cls.explanation,
            source=str(cls.source),
            rank=i,
        )
        for i, (change, cls) in enumerate(classified, start=1)
    )
