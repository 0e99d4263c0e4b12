"""What a rerun reads of a recorded run (``prove/recipe.py``): a record is input, so a program
that leads outside the repository is refused with one line before anything runs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mlflow_fingerprint.errors import UsageError
from mlflow_fingerprint.prove.recipe import contained, diff_digest, recipe_of

RECORD: dict[str, Any] = {
    "program": {
        "argv": ["train.py", "--seed", "0"],
        "entry": {"kind": "script", "path": "train.py", "sha256": "ab"},
        "cwd": ".",
        "sources": {"files": {"train.py": "ab", "model.py": "cd"}},
    },
    "git": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": False},
}


def edited(path: str, value: Any) -> dict[str, Any]:
    record = copy.deepcopy(RECORD)
    *parents, last = path.split(".")
    node = record
    for part in parents:
        node = node[part]
    node[last] = value
    return record


def test_a_plain_record_is_a_recipe() -> None:
    recipe = recipe_of("r1", RECORD, None)
    assert (recipe.script, recipe.cwd) == ("train.py", ".")
    assert recipe.argv == ("train.py", "--seed", "0")
    assert recipe.diff is None
    assert dict(recipe.sources) == {"train.py": "ab", "model.py": "cd"}


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("program.entry.path", "/tmp/elsewhere.py", "the entry point '/tmp/elsewhere.py'"),
        ("program.entry.path", "../x.py", "the entry point '../x.py'"),
        ("program.entry.path", "a/../../x.py", "the entry point"),
        ("program.entry.path", "a\0b", "the entry point"),
        ("program.argv", ["/usr/bin/elsewhere.py", "--seed", "0"], "argv[0]"),
        ("program.argv", ["../../x.py"], "argv[0]"),
        ("program.cwd", "../..", "the working directory '../..'"),
        ("program.cwd", "/home/someone", "the working directory"),
        ("program.entry", {"kind": "interactive", "path": None}, "started interactively"),
        ("program.entry", {"kind": "module", "module": "http.server"}, "'http.server'"),
        ("program.entry", {"kind": "module", "module": "os"}, "not the repository's own"),
        ("program.entry", {"kind": "module", "module": "x; import os"}, "no valid module"),
        ("git.commit", "HEAD~1", "no git commit"),
        ("program.argv", [], "recorded no program"),
    ],
)
def test_a_record_that_leads_outside_the_repository_is_refused(
    path: str, value: Any, message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        recipe_of("r1", edited(path, value), None)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_dirty_run_needs_its_stored_diff() -> None:
    dirty = edited("git.dirty", True)
    with pytest.raises(UsageError, match="whose diff was not stored"):
        recipe_of("r1", dirty, None)
    assert recipe_of("r1", dirty, "diff --git a/x b/x\n").diff is not None


def test_a_module_of_the_repository_is_a_recipe() -> None:
    entry = {"kind": "module", "module": "pkg.train", "path": "pkg/train.py"}
    record = edited("program.entry", entry)
    recipe = recipe_of("r1", record, None)
    assert (recipe.entry_kind, recipe.module) == ("module", "pkg.train")


@pytest.mark.parametrize(
    ("path", "inside"),
    [
        ("train.py", True),
        ("a/b/../c.py", True),
        (".", True),
        ("..", False),
        ("../a", False),
        ("a/../../b", False),
        ("/abs", False),
        ("", False),
        ("\\\\server\\share", False),
    ],
)
def test_containment_is_read_as_written(path: str, inside: bool) -> None:
    assert contained(path) is inside


DIFF = """diff --git a/model.py b/model.py
--- a/model.py
+++ b/model.py
@@ -1 +1 @@
-KEY = None
+KEY = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY00"
"""


def test_a_dirty_runs_diff_stored_as_it_ran_is_its_recipe() -> None:
    record = edited("git", {**RECORD["git"], "dirty": True, "diff_digest": diff_digest(DIFF)})
    assert recipe_of("r1", record, DIFF).diff == DIFF


def test_a_diff_stored_with_a_masked_secret_is_refused_not_applied() -> None:
    """The stored diff is redacted; a value masked in it would make a rerun run other code."""
    record = edited("git", {**RECORD["git"], "dirty": True, "diff_digest": diff_digest(DIFF)})
    masked = DIFF.replace("wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY00", "***")
    with pytest.raises(UsageError, match="stored diff is not the one it ran with"):
        recipe_of("r1", record, masked)
