"""The digits runs many system tests read, trained once per test session (conftest's
``digits_runs``): pairs that differ in exactly one thing, in one store.

Every run is trained in the test process (``examples/digits.py`` through its own command line),
a few dozen steps each, in a temporary git repository so that one run can have a dirty tree.
Under pytest-xdist the first worker to ask trains them and the others read their ids
(``shared_runs``): the tests only read these runs.
Unseeded runs first reseed torch from the OS, as a fresh process would. ``a_partial`` is ``a``
again whose fingerprint artifact is then deleted: a run ``diff`` must compare on its tags.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlparse

import pytest

from mlflow_fingerprint import layout

from .gitrepo import git
from .once import once_per_run
from .records import new_store

STEPS = ["--epochs", "1", "--max-steps", "15"]
EXPERIMENT = "pairs"
RUNS: Mapping[str, list[str]] = {
    "a": ["--seed", "0"],
    "a_again": ["--seed", "0"],
    "a_partial": ["--seed", "0"],
    "seed1": ["--seed", "1"],
    "unseeded1": [],
    "unseeded2": [],
    "batch32": ["--seed", "0", "--batch-size", "32"],
    "deterministic": ["--seed", "0", "--deterministic"],
    "threads1": ["--seed", "0", "--threads", "1"],
    "threads2": ["--seed", "0", "--threads", "2"],
    "workers2": ["--seed", "0", "--num-workers", "2"],
    "aug_workers0": ["--seed", "0", "--augment", "--num-workers", "0"],
    "aug_workers2": ["--seed", "0", "--augment", "--num-workers", "2"],
}


@dataclass(frozen=True)
class TrainedRuns:
    """The store and the id of each run (``RUNS``, plus ``dirty``: ``a`` on a dirty tree)."""

    uri: str
    ids: Mapping[str, str]

    def __getitem__(self, name: str) -> str:
        return self.ids[name]


def train(digits: ModuleType, uri: str, name: str, args: list[str]) -> str:
    """One run of ``examples/digits.py`` in this process; its run id."""
    import torch

    threads = torch.get_num_threads()
    if "--seed" not in args:
        torch.seed()  # a fresh process starts from an OS-drawn seed
    out = io.StringIO()
    command = [*args, *STEPS, "--experiment", EXPERIMENT, "--run-name", name]
    try:
        with contextlib.redirect_stdout(out):
            digits.main([*command, "--tracking-uri", uri])
    finally:
        torch.set_num_threads(threads)  # --threads is process-wide
    return json.loads(out.getvalue().strip().splitlines()[-1])["run_id"]


def train_runs(digits: ModuleType, root: Path, template: Path) -> TrainedRuns:
    """Every run of ``RUNS`` and ``dirty`` in a new store under ``root``."""
    import mlflow
    from mlflow import MlflowClient

    uri = new_store(root, template)
    MlflowClient(uri).create_experiment(EXPERIMENT, artifact_location=(root / "art").as_uri())
    repo = root / "repo"
    repo.mkdir()
    (repo / "recipe.txt").write_text("lr=1e-3\n")
    git(repo, "init", "-q")
    git(repo, "add", "recipe.txt")
    git(repo, "commit", "-q", "-m", "recipe")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(repo)
        patch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(root / "spool"))
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        try:
            ids = {name: train(digits, uri, name, list(args)) for name, args in RUNS.items()}
            (repo / "recipe.txt").write_text("lr=1e-3  # tuned\n")
            ids["dirty"] = train(digits, uri, "dirty", list(RUNS["a"]))
        finally:
            mlflow.set_tracking_uri(None)
    # a_partial's artifact folder is gone; its tags and metrics remain
    artifacts = urlparse(MlflowClient(uri).get_run(ids["a_partial"]).info.artifact_uri).path
    shutil.rmtree(Path(artifacts) / layout.ARTIFACT_DIR)
    return TrainedRuns(uri, ids)


def shared_runs(digits: ModuleType, factory: pytest.TempPathFactory, template: Path) -> TrainedRuns:
    """``train_runs`` once per pytest run (``support/once.py``): they cost a worker 40-90 s."""

    def build(root: Path) -> dict[str, Any]:
        runs = train_runs(digits, root, template)
        return {"uri": runs.uri, "ids": dict(runs.ids)}

    saved = once_per_run(factory, "digits-runs", build)
    return TrainedRuns(saved["uri"], saved["ids"])
