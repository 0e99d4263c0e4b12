"""From the runs' records to the table ``explain`` analyses: for each field, its value in each run.

A field enters the analysis when it varies across the runs, can change results (its rule's
effect is not ``none`` for the values seen, and it is not volatile: hostname, pid, paths), and is
known in every run. A run's record may be whole (``full``), what its ``fingerprint.*`` tags say
(``tags``: the artifact could not be read), or nothing but its params (``params``: a run never
fingerprinted). A field some runs cannot know is not guessed for them: it is listed as missing and
the runs are explained with the fields every run holds. Where some runs have tags only, every
record also offers its tag summary, as ``diff`` compares a partial record, so torch, CUDA, the GPU
and the seed stay in the analysis.

Values are compared as text (``0.1`` logged as a param and passed as an argument are one value).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...model.fingerprint import is_unavailable
from ...model.hashing import VOLATILE
from ...model.missing import MISSING
from ...model.vocabulary import Coverage, Effect
from ..fields import FieldChange, record_leaves, same_value
from ..partial import summary_record
from ..ranking import TIER
from ..rules import classify
from ..rules.base import matches, parts
from .groups import is_seed_field, replicate_key

ABSENT = "absent"
UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class RunRecord:
    """One run as ``explain`` reads it: its record (with its params under ``params``)."""

    run_id: str
    record: Mapping[str, Any]
    coverage: Coverage


@dataclass(frozen=True)
class FieldInfo:
    path: str
    effect: Effect
    explanation: str
    order: tuple[Any, ...]  # most likely cause first, as ``diff`` ranks differences


@dataclass(frozen=True)
class Table:
    fields: tuple[FieldInfo, ...]  # what the model uses: known in every run, most likely first
    texts: Mapping[str, tuple[str, ...]]  # each used (and seed) field's value in each run
    seeds: tuple[str, ...]  # seed fields that varied: what replicates differ in
    missing: tuple[str, ...]  # fields that vary but some runs cannot know
    keys: tuple[tuple[tuple[str, str], ...], ...]  # each run's replicate key


def text(value: Any) -> str:
    """A value as the table compares it."""
    if value is MISSING:
        return ABSENT
    if is_unavailable(value):
        return UNAVAILABLE
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _is_volatile(path: str) -> bool:
    return any(matches(parts(v), parts(path)) for v in VOLATILE)


def _leaves(row: RunRecord, with_summary: bool) -> dict[str, Any]:
    flat = record_leaves(row.record)
    if with_summary and row.coverage == "full":
        flat.update(record_leaves(summary_record(row.record)))
    return flat


def _varies(values: Sequence[Any]) -> bool:
    first = values[0]
    return any(not same_value(v, first) for v in values[1:])


def build(rows: Sequence[RunRecord]) -> Table:
    with_summary = any(r.coverage == "tags" for r in rows)
    flats = [_leaves(r, with_summary) for r in rows]
    universe: dict[Coverage, set[str]] = {"full": set(), "tags": set(), "params": set()}
    for row, flat in zip(rows, flats, strict=True):
        universe[row.coverage].update(flat)
    params = {p for flat in flats for p in flat if p.startswith("params.")}
    tagged = universe["tags"] | (set(record_leaves(summary_record({}))) if with_summary else set())
    known_by: dict[Coverage, set[str]] = {
        "full": universe["full"] | tagged | params,
        "tags": tagged | params,
        "params": params,
    }
    paths = sorted(set().union(*known_by.values()))
    used: list[FieldInfo] = []
    seeds: list[str] = []
    missing: list[str] = []
    texts: dict[str, tuple[str, ...]] = {}
    for path in paths:
        if _is_volatile(path):
            continue
        knowers = [i for i, r in enumerate(rows) if path in known_by[r.coverage]]
        values = [flats[i].get(path, MISSING) for i in knowers]
        if len(values) < 2 or not _varies(values):
            continue
        info = _classified(path, rows, knowers, values)
        if info is None:
            continue
        if is_seed_field(path):
            seeds.append(path)
        elif len(knowers) < len(rows):
            missing.append(path)
            continue
        else:
            used.append(info)
        if len(knowers) == len(rows):
            texts[path] = tuple(text(v) for v in values)
    used.sort(key=lambda f: f.order)
    keys = tuple(replicate_key({f.path: texts[f.path][i] for f in used}) for i in range(len(rows)))
    return Table(tuple(used), texts, tuple(seeds), tuple(missing), keys)


def _classified(
    path: str, rows: Sequence[RunRecord], knowers: Sequence[int], values: Sequence[Any]
) -> FieldInfo | None:
    """The field's effect, judged (as ``diff`` would) on the first two runs that differ in it;
    None where a difference there changes nothing (effect ``none``)."""
    first = values[0]
    j = next(k for k, v in enumerate(values) if not same_value(v, first))
    a, b = rows[knowers[0]].record, rows[knowers[j]].record
    cls = classify(FieldChange(path, first, values[j]), a, b)
    if cls.effect == "none":
        return None
    return FieldInfo(
        path, cls.effect, cls.explanation, (TIER[cls.effect], -cls.prior, cls.priority, path)
    )
