"""``tests/unit`` mirrors ``src/`` (issue 49): every module with logic has its test module,
``tests/unit/<folder>/test_<module>.py``, and every unit test module is named after the module
it tests (``scripts/test_map.py`` holds the map, and the list of modules not tested yet)."""

from __future__ import annotations

from pathlib import Path

from support.paths import ROOT
from support.scripts import load_module

test_map = load_module(ROOT / "scripts" / "test_map.py", "test_map")


def test_every_module_with_logic_has_a_test_module_named_after_it() -> None:
    missing = [f"{e.expected} (for {e.module})" for e in test_map.missing()]
    assert missing == [], "add these test modules:\n" + "\n".join(missing)


def test_every_unit_test_module_is_named_after_the_module_it_tests() -> None:
    assert test_map.strays() == [], "name each after its module: test_<module>[_<aspect>].py"


def test_the_list_of_modules_not_tested_yet_only_shrinks() -> None:
    assert test_map.stale() == [], "these have test modules now: take them off NOT_YET"


def test_the_map_sees_a_missing_test_module_and_a_misnamed_one(tmp_path: Path) -> None:
    """The check can fail: a package of three modules with logic and one of constants, its
    unit tests one missing and one named after nothing."""
    package, unit = tmp_path / "src" / "pkg", tmp_path / "tests" / "unit"
    (package / "sub").mkdir(parents=True)
    (unit / "sub").mkdir(parents=True)
    (package / "one.py").write_text("def f():\n    return 1\n")
    (package / "sub" / "__init__.py").write_text("def g():\n    return 2\n")
    (package / "sub" / "two.py").write_text("class C:\n    def m(self):\n        return 3\n")
    (package / "sub" / "names.py").write_text('A = "a"\n')
    for test in ("test_one.py", "sub/test_two_aspect.py", "sub/test_names.py", "sub/test_x.py"):
        (unit / test).write_text("")
    found = {e.module: e for e in test_map.entries(package, unit)}
    assert set(found) == {"one.py", "sub/__init__.py", "sub/two.py"}  # names.py has no logic
    assert found["sub/two.py"].tests == ("tests/unit/sub/test_two_aspect.py",)
    missing = test_map.missing(package, unit)
    assert [e.expected for e in missing] == ["tests/unit/sub/test_sub.py"]
    assert test_map.strays(package, unit) == ["tests/unit/sub/test_x.py"]
