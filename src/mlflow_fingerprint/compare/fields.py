"""Field-by-field differences between two fingerprint records.

The two records are walked together rather than flattened separately, so a section that one run
could not read (``{"unavailable": ...}``) lines up with the other run's fields one by one: a run
without a GPU shows as ``gpu.devices.0.name: absent -> NVIDIA H100``, not as one opaque blob.
Lists of scalars (CPU flags) are one value; lists of objects (GPUs, DataLoaders) are indexed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model.fields import NUMERICS_FP32_PRECISION, PROGRAM_OPTIONS
from ..model.fingerprint import is_unavailable
from ..model.missing import MISSING
from ..model.precision import normalise_precision

# Top-level keys that describe the record, not the run; compared separately (schema_version) or
# not at all (hashes are derived from the fields that are compared).
NOT_FIELDS = frozenset({"hashes", "tool_version", "captured_at"})


def option_text(value: Any) -> Any:
    """An option's number as the command line writes it: a run that recorded only its command
    line has ``"0.05"`` where one that read the program's parser has ``0.05``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


# Fields with several spellings of one meaning, compared by meaning: fp32 precision "none" that
# resolves to IEEE, "highest" and False all mean IEEE (determinism_kb.md (c)); an option's value
# typed or as text.
NORMALISE = {NUMERICS_FP32_PRECISION: normalise_precision, PROGRAM_OPTIONS: option_text}


@dataclass(frozen=True)
class FieldChange:
    """One leaf whose value differs: ``a`` and ``b`` may be MISSING or an unavailable record."""

    path: str
    a: Any
    b: Any


def _is_tree(value: Any) -> bool:
    return isinstance(value, Mapping) and not is_unavailable(value)


def _is_object_list(value: Any) -> bool:
    return isinstance(value, list | tuple) and any(isinstance(v, Mapping) for v in value)


def _is_container(value: Any) -> bool:
    return _is_tree(value) or isinstance(value, list | tuple)


def _children(value: Any) -> Mapping[str, Any]:
    """A tree's or an object list's children by name, read only. A mapping of text keys (a JSON
    object, a replicate's record that ``explain`` derives as it is read) is its own: ``explain``
    walks a record per run, and a copy of each was 1 KB a run."""
    if _is_tree(value):
        if all(type(k) is str for k in value):
            return value  # type: ignore[no-any-return]
        return {str(k): v for k, v in value.items()}
    if _is_object_list(value):
        return {str(i): v for i, v in enumerate(value)}
    return {}


def same_value(a: Any, b: Any) -> bool:
    """Equal as recorded; two unreadable values are not a difference whatever their reasons."""
    if is_unavailable(a) and is_unavailable(b):
        return True
    if isinstance(a, bool) != isinstance(b, bool):
        return False  # JSON true is not 1
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True  # a NaN recorded in both runs is the same record, whatever IEEE says
    return bool(a == b)


def walk(a: Any, b: Any, path: str = "") -> Iterator[FieldChange]:
    """Every leaf where ``a`` and ``b`` differ, in record order (``a``'s keys first)."""
    if _is_tree(a) or _is_tree(b) or _is_object_list(a) or _is_object_list(b):
        ca, cb = _children(a), _children(b)
        # A side that is a leaf (unavailable, null) stands in for each of the other side's
        # children, so every field of the readable side is compared with it.
        fill_a = MISSING if _is_container(a) else a
        fill_b = MISSING if _is_container(b) else b
        for key in dict.fromkeys([*ca, *cb]):
            child = f"{path}.{key}" if path else key
            yield from walk(ca.get(key, fill_a), cb.get(key, fill_b), child)
        return
    normalise = next((f for prefix, f in NORMALISE.items() if path.startswith(prefix + ".")), None)
    if normalise is not None and same_value(normalise(a), normalise(b)):
        return
    if not same_value(a, b):
        yield FieldChange(path, a, b)


def varying(
    records: Sequence[Any], path: str = "", *, leave_out: frozenset[str] = frozenset()
) -> Iterator[tuple[str, list[Any]]]:
    """Every leaf where ``records`` do not all agree, with each record's value there: :func:`walk`
    for many records at once (a record that is a leaf where others have fields stands in for
    each of them; one that lacks a field has MISSING). A subtree equal in every record is passed
    over whole, by ``==`` (C speed on a package list), which reads 1 and true as equal where
    :func:`same_value` does not: no field of a record holds a bool in one run and a number in
    another. Records that share a subtree (the same object: ``explain``'s replicates share
    every section but their seeds) are walked there once, whatever the number of runs.
    ``leave_out``: keys of the records themselves not walked (``explain`` leaves out what
    describes a record, where a copy of each record without them was 440 bytes a run)."""
    distinct: dict[int, Any] = {}
    index = [distinct.setdefault(id(r), len(distinct)) for r in records]
    if len(distinct) < len(records):
        once = list({id(r): r for r in records}.values())
        for found, values in varying(once, path, leave_out=leave_out):
            yield found, [values[i] for i in index]
        return
    # all distinct: neither is needed below, and this frame lives while the walk is beneath it
    # (about 100 bytes a record for each level of the walk)
    del distinct, index
    first = records[0]
    if all(r == first for r in records[1:]) and not any(
        isinstance(r, float) and math.isnan(r) for r in records
    ):
        return
    if any(_is_tree(r) or _is_object_list(r) for r in records):
        children = [_children(r) for r in records]
        fills = [MISSING if _is_container(r) else r for r in records]
        for key in dict.fromkeys(k for c in children for k in c if k not in leave_out):
            child = f"{path}.{key}" if path else key
            yield from varying(
                [c.get(key, fill) for c, fill in zip(children, fills, strict=True)], child
            )
        return
    normalise = next((f for prefix, f in NORMALISE.items() if path.startswith(prefix + ".")), None)
    values = [normalise(v) for v in records] if normalise is not None else list(records)
    if any(not same_value(v, values[0]) for v in values[1:]):
        yield path, values


def leaf_paths(record: Any) -> set[str]:
    """The dotted path of every leaf of ``record``, as :func:`varying` names them."""
    return {path for path, _ in varying([MISSING, record])}


def field_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[FieldChange]:
    """Differences between two whole records, record-describing keys left out."""
    ra = {k: v for k, v in a.items() if k not in NOT_FIELDS}
    rb = {k: v for k, v in b.items() if k not in NOT_FIELDS}
    return list(walk(ra, rb))
