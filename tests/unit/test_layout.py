"""The layout module is the only place that spells a ``fingerprint.`` tag or ``fingerprint/``
artifact path, and its names obey MLflow's limits.

Why: a tag renamed on the writing side used to leave ``find`` and the replicate search matching
nothing, silently. With every name in ``layout``, a rename is one edit that both sides see.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from mlflow_fingerprint import layout
from mlflow_fingerprint.model.declarations import TAGGED
from support.paths import FIXTURES, ROOT

LAYOUT = ROOT / "src" / "mlflow_fingerprint" / "layout.py"
HEADS = (layout.TAG_PREFIX, layout.ARTIFACT_DIR + "/")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (of the module, a class or a function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                found.add(id(body[0].value))
    return found


def layout_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string constant (or constant part of an f-string) in ``source`` that
    starts like a fingerprint tag or artifact path; docstrings and comments do not count."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith(HEADS)
        and id(node) not in skip
    ]


def test_scanner_finds_planted_literals() -> None:
    source = '''
"""Module docstring naming fingerprint.hash is fine."""
import x

def f(tags):
    """So is a function's: fingerprint/fingerprint.json."""
    # and a comment: fingerprint.seed
    a = tags.get("fingerprint.hash")
    b = f"fingerprint/ranks/rank-{0}.json"
    c = {"key": 'fingerprint.spool_id'}
    d = "not fingerprint.hash"
    e = f"{x.PREFIX}distinct"
    return a, b, c, d, e

class C:
    """fingerprint.gpu in a class docstring"""
    x = "fingerprint/diff"
'''
    assert sorted(layout_literals(source)) == [
        (8, layout.TAG_HASH),
        (9, layout.RANKS_DIR + "/rank-"),
        (10, layout.TAG_LEGACY_SPOOL_ID),
        (17, layout.REPORT_DIR),
    ]


def test_scanner_passes_clean_source() -> None:
    assert layout_literals('"""fingerprint.hash"""\nfrom x import TAG_HASH\ny = TAG_HASH\n') == []


def _python_files() -> list[Path]:
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    return sorted(p for p in files if p != LAYOUT)


def test_no_tag_or_artifact_literal_outside_layout() -> None:
    files = _python_files()
    assert Path(__file__).resolve() in files  # the scan covers the tests too
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path in files
        for line, text in layout_literals(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "use a name from mlflow_fingerprint.layout:\n" + "\n".join(offenders)


def _constants(prefix: str) -> dict[str, str]:
    return {
        name: value
        for name, value in vars(layout).items()
        if name.startswith(prefix) and isinstance(value, str)
    }


TAGS = _constants("TAG_") | {"DISTRIBUTED_TAG_PREFIX": layout.DISTRIBUTED_TAG_PREFIX}
ARTIFACTS = {
    name: value
    for name, value in vars(layout).items()
    if isinstance(value, str)
    and name.endswith(("_ARTIFACT", "_DIR"))
    and not name.startswith("EVENT_")
}
FILES = {
    name: value
    for name, value in vars(layout).items()
    if isinstance(value, str) and name.endswith("_FILE")
}


@pytest.mark.parametrize(
    "group",
    [
        TAGS,
        _constants("INTERNAL_"),
        ARTIFACTS,
        FILES,
        _constants("PARAM_"),
        _constants("EVENT_"),
        _constants("MLFLOW_"),
    ],
    ids=["tags", "internal", "artifacts", "files", "params", "events", "mlflow"],
)
def test_names_are_distinct(group: dict[str, str]) -> None:
    assert len(group) >= 2
    assert len(set(group.values())) == len(group), group


def test_tags_obey_mlflow_limits() -> None:
    keys = [*TAGS.values(), *layout.HASH_TAGS.values(), layout.distinct_tag("torch_versions")]
    keys += [*_constants("PARAM_").values(), *_constants("MLFLOW_").values()]
    keys += _constants("INTERNAL_").values()
    for key in keys:
        assert len(key) <= 250, key
        # MLflow accepts alphanumerics, underscores, dashes, periods, slashes and spaces in keys;
        # spaces are legal but break the backticked tag search of find, so none here.
        assert re.fullmatch(r"[A-Za-z0-9_\-./]+", key), key
    for name, key in TAGS.items():
        if name != "TAG_PREFIX":
            assert key.startswith(layout.TAG_PREFIX), name
    assert layout.TAG_DISTRIBUTED_BACKEND.startswith(layout.DISTRIBUTED_TAG_PREFIX)
    for name, key in _constants("INTERNAL_").items():  # bookkeeping: out of the fingerprint. tags
        assert key.startswith(layout.INTERNAL_TAG_PREFIX), name
        assert not key.startswith(layout.TAG_PREFIX), name


def test_artifact_paths_are_their_folder_and_file() -> None:
    for name, path in ARTIFACTS.items():
        assert path.startswith(layout.ARTIFACT_DIR), name
        assert " " not in path, name
        assert not path.endswith("/"), name
    for name, file in FILES.items():
        artifact = ARTIFACTS[name.removesuffix("_FILE") + "_ARTIFACT"]
        assert artifact == f"{layout.ARTIFACT_DIR}/{file}", name
    assert layout.rank_artifact(3) == f"{layout.RANKS_DIR}/rank-3.json"
    assert layout.steps_artifact(0) == layout.STEPS_ARTIFACT
    assert layout.steps_artifact(2) == f"{layout.NUMERICS_DIR}/steps.rank2.jsonl"
    assert layout.report_artifact("a", "b", "md").startswith(layout.REPORT_DIR + "/")


def test_stored_names_keep_their_values() -> None:
    """Runs already stored are found by these exact strings: every name pinned in the fixture
    keeps its value (a rename or a removal must be deliberate: the fixture is changed with it).
    New names need no edit of the fixture: ``layout.py`` says to add names, never rename them."""
    pinned = json.loads((FIXTURES / "layout_names.json").read_text())
    names = {
        name: value if isinstance(value, str) else dict(value)
        for name, value in vars(layout).items()
        if name.isupper() and isinstance(value, (str, Mapping))
    }
    changed = {
        name: (value, names.get(name)) for name, value in pinned.items() if names.get(name) != value
    }
    assert changed == {}, "stored names renamed or removed (pinned, now)"
    assert layout.distinct_tag("numerics") == pinned["DISTRIBUTED_TAG_PREFIX"] + "distinct_numerics"


def test_every_declared_tag_is_a_layout_name() -> None:
    """A field's tag (model/declarations.py) is spelt in layout.py, where stored names live."""
    for field in TAGGED:
        assert field.tag in TAGS.values(), field.path


def test_event_kinds_are_the_literal_type() -> None:
    assert sorted(_constants("EVENT_").values()) == sorted(layout.EVENT_KINDS)
