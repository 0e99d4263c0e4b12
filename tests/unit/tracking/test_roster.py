"""What ``explain`` keeps of a run to name it (``tracking/roster.py``): every id and name comes back
as it was given, None included, whatever its characters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mlflow_fingerprint.tracking.roster import Roster, RunIds, Texts
from support.memory import held_alone


def roster_of(runs: list[tuple[str, str | None]]) -> Roster:
    roster = Roster()
    for run_id, name in runs:
        roster.append(run_id, name)
    return roster


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
    runs = [("0a" * 16, "bold-fox"), ("1b" * 16, None), ("run-3", "")]
    roster = roster_of(runs)
    assert len(roster) == 3
    assert [roster.run_id(i) for i in range(3)] == [run_id for run_id, _ in runs]
    assert [roster.name(i) for i in range(3)] == ["bold-fox", None, ""]
    picked = roster.picked([2, 0])
    assert [(picked.run_id(i), picked.name(i)) for i in range(2)] == [runs[2], runs[0]]


def test_a_run_costs_its_text_not_an_object() -> None:
    """About 60 bytes a run where a string per id and name (and the object that held them)
    were about 210."""
    runs = [(f"{i:032x}", f"name-{i}") for i in range(10_000)]
    with held_alone() as held:
        roster = roster_of(runs)
    assert held.bytes < 70 * len(runs), held.bytes / len(runs)
    assert roster.run_id(9_999) == f"{9_999:032x}"


def test_run_ids_read_from_the_roster_stand_for_their_tuple() -> None:
    roster = roster_of([(f"{i:032x}", None) for i in range(6)])
    ids = RunIds.of(roster, [4, 1, 2])
    as_tuple = (f"{4:032x}", f"{1:032x}", f"{2:032x}")
    assert len(ids) == 3
    assert list(ids) == list(as_tuple)
    assert ids[0] == as_tuple[0]
    assert ids[-1] == as_tuple[-1]
    assert ids == as_tuple
    assert as_tuple == ids
    assert ids[1:] == as_tuple[1:]
    assert ids != as_tuple[:2]
    assert ids != "".join(as_tuple)
    assert hash(ids) == hash(as_tuple)
    assert f"{1:032x}" in ids
    assert repr(ids) == f"RunIds({list(as_tuple)!r})"


def test_run_ids_cost_their_places_not_their_strings() -> None:
    """4 bytes a run, where a string an id in a tuple was about 90."""
    roster = roster_of([(f"{i:032x}", None) for i in range(10_000)])
    with held_alone() as held:
        ids = RunIds.of(roster, range(10_000))
    assert held.bytes < 5 * len(ids), held.bytes / len(ids)
