"""The ids and names of many runs, each kind in one block of text: what ``explain`` keeps of a run
once its row has served, to name it in a report and to read the rest of its row by id.

Why: a run id and a run name as Python strings, with the object that holds them, were about 210
bytes a run (21 MiB of a 100,000-run history, held from the search to the report). Here a run
costs its text's UTF-8 bytes and eight bytes for where it ends: about 60 bytes a run.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from .experiment import StoredRun

_ENCODING = "utf-8"
_ERRORS = "surrogatepass"  # any str MLflow hands over comes back as it was


@dataclass(frozen=True)
class Texts:
    """Texts (or None) in order, in one block of UTF-8 bytes with where each ends."""

    data: bytes
    ends: array[int]  # where each text ends in ``data``
    given: bytes  # 1 where the text is a text, 0 where it is None

    @classmethod
    def of(cls, values: Iterable[str | None]) -> Texts:
        block = bytearray()
        ends: array[int] = array("q")
        given = bytearray()
        for value in values:
            if value is not None:
                block += value.encode(_ENCODING, _ERRORS)
            ends.append(len(block))
            given.append(value is not None)
        return cls(bytes(block), ends, bytes(given))

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

    ids: Texts
    names: Texts

    @classmethod
    def of(cls, runs: Sequence[StoredRun]) -> Roster:
        """The ids and names of ``runs``, in their order."""
        return cls(Texts.of(r.run_id for r in runs), Texts.of(r.name for r in runs))

    def __len__(self) -> int:
        return len(self.ids)

    def run_id(self, i: int) -> str:
        run_id = self.ids[i]
        assert run_id is not None  # every run has an id: Roster.of wrote a text for each
        return run_id

    def name(self, i: int) -> str | None:
        return self.names[i]
