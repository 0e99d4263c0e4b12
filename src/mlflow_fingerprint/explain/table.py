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
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..compare.fields import NOT_FIELDS, FieldChange, leaf_paths, same_value, varying
from ..compare.partial import summary_record
from ..compare.ranking import TIER
from ..compare.rules import classify
from ..compare.rules.base import matches, parts
from ..model.fingerprint import is_unavailable
from ..model.hashing import VOLATILE
from ..model.missing import MISSING
from ..model.vocabulary import COVERAGES, Coverage, Effect
from .design import Column, encode
from .groups import is_seed_field, replicate_key
from .records import Records
from .stand_ins import varying_records

ABSENT = "absent"
UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class FieldInfo:
    path: str
    effect: Effect
    explanation: str
    order: tuple[Any, ...]  # most likely cause first, as ``diff`` ranks differences


@dataclass(frozen=True)
class Table:
    fields: tuple[FieldInfo, ...]  # what the model uses: known in every run, most likely first
    columns: Mapping[str, Column]  # each used field's value in each run, as level codes
    seeds: tuple[str, ...]  # seed fields that varied: what replicates differ in
    missing: tuple[str, ...]  # fields that vary but some runs cannot know
    keys: tuple[Hashable, ...]  # each run's replicate key


def text(value: Any) -> str:
    """A value as the table compares it."""
    if value is MISSING:
        return ABSENT
    if is_unavailable(value):
        return UNAVAILABLE
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _column(path: str, values: Sequence[Any]) -> Column:
    """The field's value in each run as level codes (``design.encode``), each distinct value
    object written as text once (replicates share theirs). A code is 4 bytes a run, where a
    text was an 8-byte reference in a tuple held from the table to the report (16 fields of
    100,000 runs: 12 MiB)."""
    written: dict[int, str] = {}  # the values are held by ``values``: no id is reused

    def as_text(value: Any) -> str:
        shown = written.get(id(value))
        if shown is None:
            shown = written[id(value)] = text(value)
        return shown

    return Column(path, *encode(map(as_text, values), len(values)))


def _is_volatile(path: str) -> bool:
    return any(matches(parts(v), parts(path)) for v in VOLATILE)


# A record's keys that are not its fields: those that describe the record, and its params.
NOT_RECORDED = NOT_FIELDS | {"params"}


def _fields_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record's fields without the keys that describe the record and without its params."""
    return {k: v for k, v in record.items() if k not in NOT_RECORDED}


def _summary(records: Records, i: int) -> dict[str, Any]:
    record = records[i]
    return _fields_of(summary_record(record) if records.covered(i) == "full" else record)


def _runs_where(records: Records, known: Callable[[Coverage], bool]) -> Sequence[int]:
    """The positions of the runs whose coverage ``known`` holds for: a range where it is all
    of them (a list of 100,000 positions is 3.6 MB, held while the walk is under it)."""
    if all(known(COVERAGES[c]) for c in set(records.coverage)):
        return range(len(records))
    return [i for i in range(len(records)) if known(records.covered(i))]


def _candidates(records: Records) -> Iterator[tuple[str, Sequence[int], list[Any]]]:
    """(field, the runs that can know it, their values) for every field that varies among the
    runs that can know it: params in every run; the tag summary in runs with a whole record or
    tags (only where some have tags only); the whole record in runs that have it."""
    everyone = range(len(records))
    params = [records.params_of(i) or {} for i in everyone]
    for path, values in varying(params, "params"):
        yield path, everyone, values
    del params
    tagged = _runs_where(records, lambda c: c != "params")
    summarised: set[str] = set()
    if COVERAGES.index("tags") in records.coverage:
        summarised = leaf_paths(_fields_of(summary_record({})))
        for path, values in varying([_summary(records, i) for i in tagged]):
            yield path, tagged, values
    whole = _runs_where(records, lambda c: c == "full")
    if len(whole) >= 2:
        for path, values in varying_records(records.picked(whole), NOT_RECORDED):
            if path not in summarised:
                yield path, whole, values


def build(records: Records) -> Table:
    used: list[FieldInfo] = []
    seeds: list[str] = []
    missing: list[str] = []
    columns: dict[str, Column] = {}
    for path, knowers, values in _candidates(records):
        if _is_volatile(path):
            continue
        info = _classified(path, records, knowers, values)
        if info is None:
            continue
        if is_seed_field(path):
            seeds.append(path)  # what replicates differ in: named, never a column
        elif len(knowers) < len(records):
            missing.append(path)
        else:
            used.append(info)
            columns[path] = _column(path, values)
    used.sort(key=lambda f: f.order)
    keys = _keys(records, [columns[f.path] for f in used])
    return Table(tuple(used), columns, tuple(sorted(seeds)), tuple(sorted(missing)), keys)


# Runs whose codes are read as Python ints at once when their keys are made: a chunk's lists,
# not a whole column's (0.8 MB a field at 100,000 runs).
KEY_CHUNK = 4096


def _keys(records: Records, used: Sequence[Column]) -> tuple[Hashable, ...]:
    """Each run's replicate key. Replicates share one key object: a key is a tuple of (field,
    value) pairs, about 1 KB a run where each run held its own (10,000 runs: 10.6 MiB)."""
    held: dict[Hashable, Hashable] = {}
    keys: list[Hashable] = []
    for start in range(0, len(records), KEY_CHUNK):
        runs = range(start, min(start + KEY_CHUNK, len(records)))
        codes = [col.codes[runs.start : runs.stop].tolist() for col in used]
        rows = zip(*codes, strict=True) if codes else (() for _ in runs)
        for i, row in zip(runs, rows, strict=True):
            values = {col.field: col.labels[k] for col, k in zip(used, row, strict=True)}
            key = replicate_key(records[i] if records.covered(i) == "full" else None, values)
            keys.append(held.setdefault(key, key))
    return tuple(keys)


def _classified(
    path: str, records: Records, knowers: Sequence[int], values: Sequence[Any]
) -> FieldInfo | None:
    """The field's effect, judged (as ``diff`` would) on the first two runs that differ in it;
    None where a difference there changes nothing (effect ``none``)."""
    first = values[0]
    j = next(k for k, v in enumerate(values) if not same_value(v, first))
    a, b = records[knowers[0]], records[knowers[j]]
    cls = classify(FieldChange(path, first, values[j]), a, b)
    if cls.effect == "none":
        return None
    return FieldInfo(
        path, cls.effect, cls.explanation, (TIER[cls.effect], -cls.prior, cls.priority, path)
    )
