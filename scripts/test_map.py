"""Map every module of the package to its unit test module, and list the ones that have none.

Why: ``tests/unit`` mirrors ``src/`` (issue 49): a module with logic,
``src/mlflow_fingerprint/<folder>/<name>.py``, has its tests in
``tests/unit/<folder>/test_<name>.py`` (or, split by what they prove,
``test_<name>_<aspect>.py``), so a maintainer finds them without a grep, and a module nobody
tests shows as a missing file. A package's ``__init__.py`` with logic is tested in
``tests/unit/<folder>/test_<package>.py``. ``tests/unit/test_test_map.py`` fails when a module
with logic has no test module, or a unit test module is named after no module.

``python scripts/test_map.py`` prints the map's gaps and counts; ``--all`` prints the whole map.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "mlflow_fingerprint"
UNIT = ROOT / "tests" / "unit"

# Modules with logic that have no unit test module yet: what issue 49 found untested, less what
# has tests since. The list only shrinks: a module that gains its test module leaves it (the
# unit test says so), and a new module comes with its tests.
NOT_YET: frozenset[str] = frozenset(
    {
        "integrations/keras.py",
        "integrations/lightning.py",
        "integrations/transformers.py",
    }
)

# Unit test modules named after no one module of the package, each with what it tests.
ACROSS: dict[str, str] = {
    "test_architecture_index.py": "scripts/architecture_index.py against docs/architecture.md",
    "test_layers.py": "pyproject.toml's layers, over the imports of every module",
    "test_malformed_records.py": "every field of real records, mistyped, through show and diff",
    "test_once.py": "tests/support/once.py, the tests' own cross-worker cache",
    "test_scopes.py": "tests/support/scopes.py, the folders xdist schedules as one",
    "test_setup.py": "scripts/install.py, scripts/torch_index.py and constraints.txt",
    "test_test_map.py": "this script: tests/unit mirrors src/",
    "test_tiers.py": "tests/support/tiers.py, the tests' own tier check",
}


@dataclass(frozen=True)
class Entry:
    """One module of the package and the unit test modules named after it."""

    module: str  # relative to the package: "cli/cmd_diff.py"
    expected: str  # relative to the repository: "tests/unit/cli/test_cmd_diff.py"
    tests: tuple[str, ...]  # the test modules named after it (the expected one, its aspects)


@cache
def has_logic(path: Path) -> bool:
    """Whether a module defines a function or a method: a module of constants, of plain
    dataclasses or of re-exports has nothing of its own to test. Read once per path: the
    unit test asks for the map three times."""
    tree = ast.parse(path.read_text(), str(path))
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(tree))


def stem_for(module: Path, package: Path = PACKAGE) -> str:
    """The stem of the test module named after ``module`` (a package's ``__init__.py`` is named
    after its package): ``test_cmd_diff``, ``test_rules``."""
    stem = module.parent.name if module.name == "__init__.py" else module.stem
    if module == package / "__init__.py":
        stem = package.name
    return f"test_{stem}"


def unit_folder(module: Path, package: Path = PACKAGE, unit: Path = UNIT) -> Path:
    """The folder under ``tests/unit`` that mirrors the module's package."""
    return unit / module.parent.relative_to(package)


def logic_modules(package: Path = PACKAGE) -> list[Path]:
    """Every module of the package that has logic, in path order."""
    return sorted(p for p in package.rglob("*.py") if has_logic(p))


def unit_modules(unit: Path = UNIT) -> list[Path]:
    """Every unit test module."""
    return sorted(unit.rglob("test_*.py"))


def named_after(test: Path, module: Path, package: Path = PACKAGE) -> bool:
    """``test_x.py`` and ``test_x_<aspect>.py`` are named after the module ``x``; a package's
    ``__init__.py`` only by the exact name (``test_compare_changes.py`` is no test of
    ``compare/__init__.py``)."""
    stem = stem_for(module, package)
    aspect = module.name != "__init__.py" and test.stem.startswith(f"{stem}_")
    return test.stem == stem or aspect


def owner(test: Path, modules: list[Path], package: Path, unit: Path) -> Path | None:
    """The module a test module is named after: in its mirrored folder, the longest name that
    matches (``test_git_files.py`` belongs to ``git_files.py``, not to ``git.py``)."""
    here = [m for m in modules if unit_folder(m, package, unit) == test.parent]
    matches = [m for m in here if named_after(test, m, package)]
    return max(matches, key=lambda m: len(stem_for(m, package)), default=None)


def entries(package: Path = PACKAGE, unit: Path = UNIT) -> list[Entry]:
    """The map: every module with logic and the test modules named after it."""
    modules = logic_modules(package)
    tests = unit_modules(unit)
    owned = {t: owner(t, modules, package, unit) for t in tests}
    root = unit.parent.parent
    return [
        Entry(
            module=m.relative_to(package).as_posix(),
            expected=(unit_folder(m, package, unit) / f"{stem_for(m, package)}.py")
            .relative_to(root)
            .as_posix(),
            tests=tuple(t.relative_to(root).as_posix() for t in tests if owned[t] == m),
        )
        for m in modules
    ]


def missing(package: Path = PACKAGE, unit: Path = UNIT) -> list[Entry]:
    """The modules with logic that have no test module, outside ``NOT_YET``."""
    return [e for e in entries(package, unit) if not e.tests and e.module not in NOT_YET]


def stale(package: Path = PACKAGE, unit: Path = UNIT) -> list[str]:
    """Entries of ``NOT_YET`` that are no longer true: the module has a test module now, or
    is gone."""
    untested = {e.module for e in entries(package, unit) if not e.tests}
    return sorted(NOT_YET - untested)


def strays(package: Path = PACKAGE, unit: Path = UNIT) -> list[str]:
    """Unit test modules named after no module (a module of rules without logic of its own
    counts: ``compare/rules/gpu.py``), outside ``ACROSS``."""
    modules = sorted(package.rglob("*.py"))
    root = unit.parent.parent
    return [
        t.relative_to(root).as_posix()
        for t in unit_modules(unit)
        if owner(t, modules, package, unit) is None and t.relative_to(unit).as_posix() not in ACROSS
    ]


def imported_by_name(package: Path = PACKAGE, unit: Path = UNIT) -> set[str]:
    """The modules some unit test imports by their dotted name (the measure issue 49 quoted)."""
    text = "\n".join(t.read_text() for t in unit.rglob("*.py"))
    found = set()
    for m in package.rglob("*.py"):
        parts = [package.name, *m.relative_to(package).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        dotted = ".".join(parts)
        parent, name = ".".join(parts[:-1]), parts[-1]
        by_from = re.compile(rf"from {re.escape(parent)} import [^\n]*\b{name}\b")
        if re.search(rf"\b{re.escape(dotted)}\b", text) or by_from.search(text):
            found.add(m.relative_to(package).as_posix())
    return found


def main(argv: list[str]) -> int:
    all_modules = sorted(PACKAGE.rglob("*.py"))
    mapped = entries()
    gaps, stray, old = missing(), strays(), stale()
    if "--all" in argv:
        for e in mapped:
            print(f"{e.module:45} {', '.join(e.tests) or '-- none (' + e.expected + ')'}")
    for e in gaps:
        print(f"missing: {e.expected} (for {e.module})")
    for s in stray:
        print(f"named after no module: {s}")
    for m in old:
        print(f"in NOT_YET but tested (or gone): {m}")
    print(
        f"{len(all_modules)} modules, {len(mapped)} with logic; "
        f"{sum(bool(e.tests) for e in mapped)} have a test module named after them, "
        f"{sum(not e.tests for e in mapped)} none ({len(NOT_YET)} listed as not yet); "
        f"{len(stray)} unit test modules named after no module; "
        f"{len(all_modules) - len(imported_by_name())} modules never imported by name in tests/unit"
    )
    return 1 if gaps or stray or old else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
