"""Every run's record as ``explain`` holds it from the reads to the table: a few dozen bytes a run,
each record made again, equal, whenever it is read.

Why: the records are made page by page but the table is made from all of them at once, so every
run's record is held until then. A record object for each run (a ``RunRecord``, a replicate's
``Reseeded`` and its two hashes) was about 240 bytes a run: 23 MiB of a 100,000-run history,
more than the table made from it. What the runs do not share is little: a replicate's seed and
its two hashes, which of the few params mappings it logged, and which base its recipe's
replicates share. So a run is held as that (:class:`Records`: 33 bytes a run) beside the
objects the runs share (the records read, each base, each params mapping), and :meth:`record`
makes its record from them as ``_read`` had: a replicate's ``Reseeded`` of the same base, seed,
params and hashes; a record read for itself (or what its tags say) as that record with its
params; a run never fingerprinted as its params alone.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.vocabulary import COVERAGES, Coverage
from .replicas import Reseeded

# A replicate's two hashes as held (``Reseeded.held_hashes``): two 16-digit digests' bytes.
HASHED = 16
_NO_HASHES = bytes(HASHED)
_NONE = -1  # no source: a run known by its params alone; no params of its own: the base's


@dataclass(frozen=True)
class Records(Sequence[Mapping[str, Any]]):
    """The runs' records in the order they were added, each run held as its coverage, its
    params (an index into :attr:`shared`) and its source (an index into :attr:`sources`: the
    record read for it, its tags' record, or its base as ``Reseeded.made_from`` gives it), with
    a replicate's seed and hashes. A sequence of the records themselves, each made as it is
    read."""

    coverage: bytearray = field(default_factory=bytearray)  # positions in COVERAGES
    params: array[int] = field(default_factory=lambda: array("q"))
    source: array[int] = field(default_factory=lambda: array("q"))
    seed: array[int] = field(default_factory=lambda: array("q"))  # a replicate's; 0 otherwise
    hashes: bytearray = field(default_factory=bytearray)  # HASHED bytes a run
    odd: dict[int, tuple[str, str] | None] = field(default_factory=dict)  # hashes not so held
    shared: list[Mapping[str, Any]] = field(default_factory=list)  # each params mapping once
    sources: list[Any] = field(default_factory=list)  # each source once
    derived: bytearray = field(default_factory=bytearray)  # 1 where the record is a Reseeded
    _places: dict[Any, int] = field(default_factory=dict)  # id(shared object) -> its index

    def add(
        self, coverage: Coverage, record: Mapping[str, Any] | None, params: Mapping[str, Any]
    ) -> None:
        """A run's record: a replicate's ``Reseeded`` (``params`` are its own); else the record
        read for it or its tags' record, without params (None where it has neither), and the
        ``params`` it is read with."""
        at = len(self.coverage)
        self.coverage.append(COVERAGES.index(coverage))
        if isinstance(record, Reseeded):
            base, old, places = record.made_from
            self.source.append(self._place(("base", id(base), old, id(places)), record.made_from))
            own = record.params
            self.params.append(_NONE if own is None else self._place(("params", id(own)), own))
            self.seed.append(record.seed)
            held = record.held_hashes
            if isinstance(held, bytes) and len(held) == HASHED:
                self.hashes.extend(held)
            else:
                self.hashes.extend(_NO_HASHES)
                self.odd[at] = held  # type: ignore[assignment]  # a pair, or None
            self.derived.append(1)
            return
        source = _NONE if record is None else self._place(("record", id(record)), record)
        self.source.append(source)
        self.params.append(self._place(("params", id(params)), params))
        self.seed.append(0)
        self.hashes.extend(_NO_HASHES)
        self.derived.append(0)

    def _place(self, key: tuple[Any, ...], shared: Any) -> int:
        """The index of an object the runs share, in :attr:`shared` for params and in
        :attr:`sources` for the rest (held there, so no id is reused while it is)."""
        at = self._places.get(key)
        if at is None:
            into = self.shared if key[0] == "params" else self.sources
            at = self._places[key] = len(into)
            into.append(shared)
        return at

    def __len__(self) -> int:
        return len(self.coverage)

    def covered(self, i: int) -> Coverage:
        """How much of run ``i`` was read."""
        return COVERAGES[self.coverage[i]]

    def params_of(self, i: int) -> Mapping[str, Any] | None:
        """Run ``i``'s params, as its record holds them."""
        k = self.params[i]
        return self.shared[k] if k != _NONE else self[i].get("params")

    def __getitem__(self, i: int) -> Mapping[str, Any]:  # type: ignore[override]
        """Run ``i``'s record, made again: equal to the one added, never the same object."""
        k, p = self.source[i], self.params[i]
        params = self.shared[p] if p != _NONE else None
        if self.derived[i]:
            base, old, places = self.sources[k]
            held = self.odd.get(i) if i in self.odd else self._hashes(i)
            return Reseeded(base, old, self.seed[i], params, held, places)
        if k == _NONE:
            return {"params": params}
        return {**self.sources[k], "params": params}

    def _hashes(self, i: int) -> bytes:
        return bytes(self.hashes[i * HASHED : (i + 1) * HASHED])

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return (self[i] for i in range(len(self)))

    def subset(self, positions: Sequence[int]) -> Records:
        """The runs at ``positions``, in their order, sharing what these runs share."""
        out = Records(shared=self.shared, sources=self.sources, _places=self._places)
        for i in positions:
            if i in self.odd:
                out.odd[len(out)] = self.odd[i]
            out.coverage.append(self.coverage[i])
            out.params.append(self.params[i])
            out.source.append(self.source[i])
            out.seed.append(self.seed[i])
            out.hashes.extend(self._hashes(i))
            out.derived.append(self.derived[i])
        return out

    def picked(self, positions: Sequence[int]) -> Sequence[Mapping[str, Any]]:
        """The records of the runs at ``positions``, each made as it is read."""
        if isinstance(positions, range) and positions == range(len(self)):
            return self
        return Picked(self, positions)


@dataclass(frozen=True)
class Picked(Sequence[Mapping[str, Any]]):
    """Some runs' records, in the order of their positions."""

    records: Records
    positions: Sequence[int]

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, i: int) -> Mapping[str, Any]:  # type: ignore[override]
        return self.records[self.positions[i]]
