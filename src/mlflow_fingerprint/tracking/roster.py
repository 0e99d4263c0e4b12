"""The ids and names of many runs, each kind in one block of text: what ``explain`` keeps of a run
once its row has served, to name it in a report and to read the rest of its row by id.

Why: a run id and a run name as Python strings, with the object that holds them, were about 210
bytes a run (21 MiB of a 100,000-run history, held from the search to the report). Here a run
costs its text's UTF-8 bytes and nine bytes for where it ends and whether it is there: about 60
bytes a run.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

_ENCODING = "utf-8"
_ERRORS = "surrogatepass"  # any str MLflow hands over comes back as it was


@dataclass(frozen=True)
class Texts:
    """Texts (or None) in order, in one block of UTF-8 bytes with where each ends; added to
    one at a time (:meth:`append`), as a search's rows come."""

    data: bytearray = field(default_factory=bytearray)
    ends: array[int] = field(default_factory=lambda: array("q"))  # where each ends in data
    given: bytearray = field(default_factory=bytearray)  # 1 for a text, 0 for None

    @classmethod
    def of(cls, values: Iterable[str | None]) -> Texts:
        texts = cls()
        for value in values:
            texts.append(value)
        return texts

    def append(self, value: str | None) -> None:
        if value is not None:
            self.data.extend(value.encode(_ENCODING, _ERRORS))
        self.ends.append(len(self.data))
        self.given.append(value is not None)

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, i: int) -> str | None:
        if not self.given[i]:
            return None
        start = self.ends[i - 1] if i > 0 else 0
        return self.data[start : self.ends[i]].decode(_ENCODING, _ERRORS)

    def __iter__(self) -> Iterator[str | None]:
        return (self[i] for i in range(len(self)))


@dataclass(frozen=True)
class Roster:
    """Runs by their place: each one's id and name."""

    ids: Texts = field(default_factory=Texts)
    names: Texts = field(default_factory=Texts)

    def append(self, run_id: str, name: str | None) -> None:
        self.ids.append(run_id)
        self.names.append(name)

    def picked(self, positions: Iterable[int]) -> Roster:
        """The runs at ``positions``, in their order."""
        out = Roster()
        for i in positions:
            out.append(self.run_id(i), self.name(i))
        return out

    def __len__(self) -> int:
        return len(self.ids)

    def run_id(self, i: int) -> str:
        run_id = self.ids[i]
        assert run_id is not None  # every run has an id: append wrote a text for each
        return run_id

    def name(self, i: int) -> str | None:
        return self.names[i]


@dataclass(frozen=True, eq=False)
class RunIds(Sequence[str]):
    """Some runs' ids, read from their roster when asked: what a report lists of each replicate
    group. Why: every run of a history is in one group or another, and an id as a string of its
    own was about 90 bytes a run (9 MiB of a 100,000-run report) where its place is 4 bytes."""

    roster: Roster
    places: array[int]  # each run's place in the roster, in order

    @classmethod
    def of(cls, roster: Roster, places: Iterable[int]) -> RunIds:
        return cls(roster, array("i", places))

    def __len__(self) -> int:
        return len(self.places)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> RunIds: ...
    def __getitem__(self, i: int | slice) -> str | RunIds:
        if isinstance(i, slice):
            return RunIds(self.roster, self.places[i])
        return self.roster.run_id(self.places[i])

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same ids in the same order, a tuple of them included,
        as the tuple it stands for would be."""
        if isinstance(other, str) or not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"RunIds({list(self)!r})"
