"""``support/scopes.py``: a folder under tests/system is one unit of scheduling, every other
test module its own."""

from __future__ import annotations

from support.paths import ROOT
from support.scopes import known_seconds, longest_first, scope_of, scope_seconds


def test_a_system_folder_is_one_scope_and_a_module_its_own() -> None:
    assert scope_of("tests/system/bisect/test_bisect_ends.py::test_x") == "tests/system/bisect"
    assert scope_of("tests/system/bisect/test_bisect_input.py::test_y[a]") == "tests/system/bisect"
    assert scope_of("tests/system/test_sync.py::test_z") == "tests/system/test_sync.py"
    assert scope_of("tests/unit/run/test_apply.py::test_w") == "tests/unit/run/test_apply.py"


def test_a_report_gives_each_unit_its_seconds_longest_first() -> None:
    report = [
        "12.50s setup    tests/system/bisect/test_bisect_causes.py::test_a[seed]",
        "1.25s call     tests/system/bisect/test_bisect_ends.py::test_b",
        "3.00s call     tests/unit/test_x.py::test_c",
        "0.50s teardown tests/unit/test_x.py::test_d",
        "(42 durations < 0.005s hidden.  Use -vv to show these durations.)",
        "tests/unit/test_y.py::test_e PASSED",
    ]
    assert list(scope_seconds(report).items()) == [
        ("tests/system/bisect", 13.8),
        ("tests/unit/test_x.py", 3.5),
    ]


def test_units_go_out_system_first_longest_first_then_unknown_ones_by_tests() -> None:
    units = {
        "tests/unit/test_many.py": {"a": False, "b": False, "c": False},
        "tests/system/test_short.py": {"a": False},
        "tests/unit/test_new.py": {"a": False},
        "tests/system/test_long.py": {"a": False},
        "tests/unit/test_newer.py": {"a": False, "b": False},
    }
    seconds = {
        "tests/system/test_long.py": 90.0,
        "tests/system/test_short.py": 2.0,
        "tests/unit/test_many.py": 2.0,
        "tests/gone.py": 500.0,
    }
    assert longest_first(units, seconds) == [
        "tests/system/test_long.py",
        "tests/system/test_short.py",
        "tests/unit/test_many.py",  # the unit tier after the system tier
        "tests/unit/test_newer.py",
        "tests/unit/test_new.py",
    ]
    seconds["tests/system/test_many.py"] = 2.0
    units["tests/system/test_many.py"] = {"a": False, "b": False}
    assert longest_first(units, seconds)[:3] == [
        "tests/system/test_long.py",
        "tests/system/test_many.py",  # as long as test_short.py: more tests first
        "tests/system/test_short.py",
    ]


def test_the_committed_durations_name_units_that_exist() -> None:
    """A unit renamed or removed is measured again, not left in the file to order nothing."""
    known = known_seconds()
    assert len(known) > 100
    missing = [unit for unit in known if not (ROOT / unit).exists()]
    assert missing == []
