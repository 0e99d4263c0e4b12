"""Every record path the package names is declared once, in model/fields.py: a dotted path spelt
as a string anywhere else in src/ fails here, listed, so renaming a field stays one edit the type
checker follows. The declared paths come from the module itself, so a new field is checked
without editing this test."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mlflow_fingerprint
from mlflow_fingerprint.model import fields
from mlflow_fingerprint.model.declarations import FIELDS
from mlflow_fingerprint.model.fields import Family, Field, Pattern
from mlflow_fingerprint.model.fingerprint import get_path
from mlflow_fingerprint.model.record import SECTIONS, read

PACKAGE = Path(mlflow_fingerprint.__file__).parent
DECLARING = PACKAGE / "model" / "fields.py"


def declared_paths() -> set[str]:
    return {
        str(value)
        for name, value in vars(fields).items()
        if name.isupper() and isinstance(value, Field | Pattern)
    }


# Dotted names that are not record paths though a field's path starts with them: the artifact
# file of a run's uncommitted changes (``layout.GIT_DIFF_FILE``).
NOT_PATHS = {"git.diff"}


def names_a_path(text: str, paths: set[str]) -> bool:
    """A literal names a record path where it is a declared path (or one followed by a dot, the
    prefix of the fields below it), a declared field's path with more segments after it, or the
    start of a declared path (``gpu.driver`` matching ``gpu.driver_version`` by prefix). A
    section's name alone (``torch.``) is also a module's: it counts only with a field after it."""
    stem = text.removesuffix(".")
    if "." not in stem or text.strip() != text or " " in text or stem in NOT_PATHS:
        return False
    if stem in paths or any(p.startswith(stem) for p in paths):
        return True
    parts = stem.split(".")
    return any(".".join(parts[:n]) in paths for n in range(2, len(parts)))


def path_literals(source: str, paths: set[str]) -> list[tuple[int, str]]:
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and names_a_path(node.value, paths)
    ]


def test_no_record_path_is_spelt_outside_its_declaration() -> None:
    paths = declared_paths()
    found = [
        f"{file.relative_to(PACKAGE)}:{line}: {text!r}"
        for file in sorted(PACKAGE.rglob("*.py"))
        if file != DECLARING
        for line, text in path_literals(file.read_text(), paths)
    ]
    assert not found, "record paths spelt outside model/fields.py:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("seeds.requested", True),
        ("program.options.", True),
        ("determinism.env.CUBLAS_WORKSPACE_CONFIG", True),
        ("gpu.devices.*.uuid_digest", True),
        ("gpu.driver", True),  # the start of gpu.driver_version, matched by prefix
        ("torch.nn.modules.module", False),  # a module of torch, not a field of the record
        ("packages.txt", False),
        ("seeds", False),
        ("torch.", False),
        ("seeds.requested differs", False),
    ],
)
def test_the_scanner_tells_a_path_from_other_dotted_words(text: str, named: bool) -> None:
    assert names_a_path(text, declared_paths()) is named


def test_the_scanner_finds_a_path_spelt_in_code() -> None:
    source = 'x = get_path(record, "git.dirty")\ny = f"program.options.{name}"\n'
    assert path_literals(source, declared_paths()) == [(1, "git.dirty"), (2, "program.options.")]


def test_each_field_is_its_path_in_its_section() -> None:
    paths = declared_paths()
    assert all(p.split(".")[0] in {*SECTIONS, "params", "hashes"} for p in paths)
    assert {f.path for f in FIELDS} <= paths
    assert fields.SEEDS_REQUESTED == "seeds.requested"
    assert fields.SEEDS_REQUESTED.section == "seeds"
    assert fields.GIT_DIRTY.covers("git.dirty")
    assert not fields.GIT_DIRTY.covers("git.dirty_x")


def test_a_field_reads_as_its_dotted_path() -> None:
    record = {"seeds": {"requested": 7}, "git": {"dirty": False}}
    assert get_path(record, fields.SEEDS_REQUESTED) == 7
    assert get_path(record, fields.GIT_DIRTY) is False
    assert get_path(record, fields.GIT_COMMIT) is None
    assert get_path(record, fields.GIT_COMMIT, "none") == "none"


def test_a_family_names_the_fields_below_it_and_nothing_else() -> None:
    options = Family(fields.PROGRAM_OPTIONS)
    assert options.name("program.options.lr") == "lr"
    assert options.name("program.options.lr.x") is None
    assert options.name("program.call.lr") is None
    assert options.path("lr") == "program.options.lr"


def test_read_gives_a_scalar_only_where_it_has_the_declared_type() -> None:
    record = {
        "distributed": {"world_size": True, "backend": {"unavailable": "no group"}},
        "seeds": {"requested": 3},
        "git": {"commit": "abc123", "dirty": "yes"},
    }
    assert fields.SEEDS_REQUESTED.kind is int
    assert read(record, fields.SEEDS_REQUESTED) == 3
    assert read(record, fields.GIT_COMMIT) == "abc123"
    assert read(record, fields.DISTRIBUTED_WORLD_SIZE) is None  # a bool is not a count
    assert read(record, fields.DISTRIBUTED_BACKEND) is None  # unavailable reads as absent
    assert read(record, fields.GIT_DIRTY) is None  # a string where a flag is due
    assert read(record, fields.GIT_BRANCH) is None  # not recorded
