"""Recorded runs as a rerun or a bisect reads them (``prove.recorded.Recorded``), built from real
records without a store: for the unit tests of what a rerun plans and concludes before it starts
anything (no tests here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlflow_fingerprint.compare.report import RunRef
from mlflow_fingerprint.compare.resolve import Resolved
from mlflow_fingerprint.compare.settable import split
from mlflow_fingerprint.prove.curves import Metrics
from mlflow_fingerprint.prove.pair import Setup
from mlflow_fingerprint.prove.recipe import Recipe
from mlflow_fingerprint.prove.recorded import Recorded, differences

URI = "sqlite:///unused.db"  # a rerun planned, never started, reads no store


def recipe(run_id: str, commit: str = "0" * 40, **changes: Any) -> Recipe:
    """The recipe of a script run ``train.py --seed 0`` at ``commit``, clean."""
    fields: dict[str, Any] = {
        "run_id": run_id,
        "argv": ("train.py", "--seed", "0"),
        "entry_kind": "script",
        "module": None,
        "entry_path": "train.py",
        "cwd": ".",
        "commit": commit,
        "diff": None,
        "diff_digest": None,
    }
    fields.update(changes)
    return Recipe(**fields)


def recorded(
    run_id: str,
    record: Mapping[str, Any],
    wall_s: float | None = None,
    uri: str = URI,
    **recipe_changes: Any,
) -> Recorded:
    """``record`` as the run ``run_id`` of the store at ``uri``."""
    ref = RunRef(run_id, run_id, "run", f"name-{run_id}", "0")
    resolved = Resolved(ref, record, tracking_uri=uri)
    return Recorded(resolved, recipe(run_id, **recipe_changes), wall_s)


def setup_of(a: Recorded, b: Recorded, parted: int | None = 3, until: int | None = 5) -> Setup:
    """What a bisect of ``a`` and ``b`` reads before rerunning, with no metrics of its own."""
    found = differences(a.record, b.record)
    empty = Metrics({}, {})
    return Setup(a, b, ["loss"], (empty, empty), parted, until, found, split(found))
