"""``support/scopes.py``: a folder under tests/system is one unit of scheduling, every other
test module its own."""

from __future__ import annotations

from support.scopes import scope_of


def test_a_system_folder_is_one_scope_and_a_module_its_own() -> None:
    assert scope_of("tests/system/bisect/test_bisect_ends.py::test_x") == "tests/system/bisect"
    assert scope_of("tests/system/bisect/test_bisect_input.py::test_y[a]") == "tests/system/bisect"
    assert scope_of("tests/system/test_sync.py::test_z") == "tests/system/test_sync.py"
    assert scope_of("tests/unit/run/test_apply.py::test_w") == "tests/unit/run/test_apply.py"
