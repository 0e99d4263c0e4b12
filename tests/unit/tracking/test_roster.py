"""What ``explain`` keeps of a run to name it (``tracking/roster.py``): every id and name comes back
as it was given, None included, whatever its characters."""

from __future__ import annotations

from types import MappingProxyType

from hypothesis import given
from hypothesis import strategies as st

from mlflow_fingerprint.tracking.experiment import StoredRun
from mlflow_fingerprint.tracking.roster import Roster, Texts

NONE = MappingProxyType({})


def row(run_id: str, name: str | None) -> StoredRun:
    return StoredRun(run_id, name, "FINISHED", "1", "", NONE, NONE, NONE, NONE)


@given(st.lists(st.one_of(st.none(), st.text())))
def test_texts_come_back_as_given(values: list[str | None]) -> None:
    held = Texts.of(values)
    assert len(held) == len(values)
    assert list(held) == values
    assert [held[i] for i in range(len(values))] == values


def test_a_none_is_not_an_empty_name_and_any_character_survives() -> None:
    names = [None, "", "ünïcode ✓", "\ud800 lone surrogate", "a\x00b", None]
    held = Texts.of(names)
    assert list(held) == names
    assert held[1] == ""
    assert held[0] is None


def test_a_roster_names_each_run_by_its_place() -> None:
    runs = [row("0a" * 16, "bold-fox"), row("1b" * 16, None), row("run-3", "")]
    roster = Roster.of(runs)
    assert len(roster) == 3
    assert [roster.run_id(i) for i in range(3)] == [r.run_id for r in runs]
    assert [roster.name(i) for i in range(3)] == ["bold-fox", None, ""]


def test_a_run_costs_its_text_not_an_object() -> None:
    """About 60 bytes a run where a string per id and name (and the object that held them)
    were about 210."""
    import tracemalloc

    runs = [row(f"{i:032x}", f"name-{i}") for i in range(10_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        roster = Roster.of(runs)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 70 * len(runs), held / len(runs)
    assert roster.run_id(9_999) == f"{9_999:032x}"
