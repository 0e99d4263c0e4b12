"""The fields that vary across the runs' whole records, walked once per recipe, not once per run.

Why: a team's history is a few hundred recipes, each run with many seeds, so most of its records
are replicates' (:class:`replicas.Reseeded`): a base's record with the run's seed in the seed's
places. The walk (``compare.fields.varying``) holds lists as long as the runs at each level of
each section; walking a few stand-ins finds the same fields:

- a record that is not a reseeded replicate (one read for itself, a base) stands for itself;
- a recipe's replicates with one seed hold one record, so one of them stands for all;
- replicates of one recipe differ only where the seed is, so those of its first two seeds stand
  for all its others: a field where those two agree holds no seed, and every replicate of the
  recipe has their value there; where they differ, each replicate's own value is read.

Every stand-in is a run's own record and the others agree with theirs wherever no seed is, so a
field varies across the records exactly where it varies across the stand-ins, and each record's
value there is the one the walk of every record gives it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..compare.fields import varying
from .replicas import Reseeded, put_seed, seed_places

# What a stand-in is held under: a record's id, or a replicate's base's id and its seed.
Key = int | tuple[int, int]


def varying_records(
    records: Sequence[Mapping[str, Any]], leave_out: frozenset[str]
) -> Iterator[tuple[str, list[Any]]]:
    """``compare.fields.varying(records, leave_out=leave_out)``, walking the stand-ins."""
    stand_ins: list[Mapping[str, Any]] = []
    # the stand-ins alone are held by key: a dict of every (recipe, seed) was 16 MiB at 100,000
    # runs, the most of the table's making, and a seed without a stand-in is ~r however often
    held: dict[Key, int] = {}  # -> its stand-in's place
    firsts: dict[int, list[int]] = {}  # a base's id -> the stand-ins of its first two seeds
    recipes: list[list[int]] = []  # the stand-ins of each recipe with more than two seeds
    numbered: dict[int, int] = {}  # a base's id -> ~(its place among recipes), one int object
    plan: list[int] = []  # each record's stand-in; ~r for a seed of recipe r without one

    def stand_in(key: Key, record: Mapping[str, Any]) -> int:
        held[key] = len(stand_ins)
        stand_ins.append(record)
        return held[key]

    for record in records:
        if not isinstance(record, Reseeded):
            key: Key = id(record)
            k = held.get(key)
            plan.append(stand_in(key, record) if k is None else k)
            continue
        key = (id(record.base), record.seed)
        k = held.get(key)
        if k is None:
            pair = firsts.setdefault(id(record.base), [])
            if not record.reseeded:
                k = stand_in(key, record)
            elif len(pair) < 2:
                k = stand_in(key, record.walked())
                pair.append(k)
            else:
                k = numbered.setdefault(id(record.base), ~len(recipes))
                if ~k == len(recipes):
                    recipes.append(pair)
        plan.append(k)
    # where no seed is, every record reads as its stand-in (a recipe's first seed's, if none)
    resolved = [k if k >= 0 else recipes[~k][0] for k in plan]
    for path, values in varying(stand_ins, leave_out=leave_out):
        out = [values[k] for k in resolved]
        # where a recipe's first two seeds differ, the places that hold the seed
        seeded = {
            r: (values[a], seed_places(values[a], values[b]))
            for r, (a, b) in enumerate(recipes)
            if not _same(values[a], values[b])
        }
        if seeded:
            for i, k in enumerate(plan):
                if k < 0 and ~k in seeded:
                    value, places = seeded[~k]
                    out[i] = put_seed(value, places, _seed(records[i]))
        yield path, out


def _seed(record: Mapping[str, Any]) -> int:
    assert isinstance(record, Reseeded)  # a seed of a recipe without a stand-in of its own
    return record.seed


def _same(a: Any, b: Any) -> bool:
    """One value, as two replicates' records hold it where no seed is: the very object, or an
    equal one of its type (a seed in one and not the other is never equal: seeds differ)."""
    return a is b or (type(a) is type(b) and bool(a == b))
