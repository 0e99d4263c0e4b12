"""A run's tags, params or metrics as ``explain`` holds them: values in a tuple, keys shared.

Why: ``explain`` holds one row per run until its records are read, and a history of 100,000
runs repeats the same few key sets (every fingerprinted run has the same 21 tags). A dict per
mapping per run (four a run) was most of a row; a tuple of values beside a key index that every
run with those keys shares is about half of it (:func:`pack`), and a mapping many runs hold
whole (the step of each latest metric: 0 for a summary metric) is one object for all of them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

V = TypeVar("V")


class Pairs(Mapping[str, V]):
    """A read-only mapping: ``index`` (key -> position, shared by every mapping with those keys
    in that order) and this mapping's ``values`` at those positions."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: Mapping[str, int], values: tuple[V, ...]) -> None:
        self._index = index
        self._values = values

    def __getitem__(self, key: str) -> V:
        return self._values[self._index[key]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def get(self, key: str, default: Any = None) -> Any:
        at = self._index.get(key)
        return default if at is None else self._values[at]

    def __repr__(self) -> str:
        return f"Pairs({dict(self)!r})"


@dataclass(frozen=True)
class Held:
    """What the runs read together share: one object per text (a tag or param name, a repeated
    value), one key index per key order, and mappings held whole by many runs. Shared by the
    threads of a sliced search: ``setdefault`` on a dict is atomic."""

    texts: dict[str, str] = field(default_factory=dict)
    layouts: dict[tuple[str, ...], Mapping[str, int]] = field(default_factory=dict)
    whole: dict[Hashable, Pairs[Any]] = field(default_factory=dict)

    def text(self, value: str) -> str:
        return self.texts.setdefault(value, value)


def pack(mapping: Mapping[str, V], held: Held, *, whole: bool = False) -> Pairs[V]:
    """``mapping`` as :class:`Pairs`, its keys and string values the objects ``held`` holds;
    with ``whole``, the one object for every equal mapping (for mappings of few distinct
    values across the runs: holding each distinct one costs a key of its own)."""
    keep = held.texts.setdefault  # C calls: a history's rows are millions of texts
    keys = tuple(keep(k, k) for k in mapping)
    index = held.layouts.get(keys)
    if index is None:
        index = held.layouts.setdefault(keys, {k: i for i, k in enumerate(keys)})
    # a string value is the text held (the same text, so still a V)
    values: tuple[V, ...] = tuple(
        keep(v, v) if type(v) is str else v  # type: ignore[misc, arg-type]
        for v in mapping.values()
    )
    if not whole:
        return Pairs(index, values)
    return held.whole.setdefault((keys, values), Pairs(index, values))
