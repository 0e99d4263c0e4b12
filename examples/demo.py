"""The main job: three digits runs on MLflow's default local store, two diffs, and the A-vs-B
report stored in run B, where the MLflow UI shows it.

A and A-again are the same seeded recipe: ``fingerprint diff`` says ``same_results`` (exit 0). B
differs in one setting, ``--num-workers 2``: the random augmentation moves into two DataLoader
workers, which draw from their own random streams, and the diff names ``num-workers`` as the
cause and shows the step where the loss curves part (exit 1). The demo prints what a user reads:
each run, the two diffs, the experiment's name with the ``explain`` command and how to open the
MLflow UI on it, every line within 100 columns.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import time
from pathlib import Path

from mlflow_fingerprint.wrap import command_lines
from pair import diff, log_report, train

EXPERIMENT = "fingerprint-demo"
RECIPE = ["--seed", "0", "--augment", "--epochs", "1", "--max-steps", "80"]
UI_PORT = 5000  # mlflow ui's default


def command(name: str) -> str:
    """How the user types one of the venv's commands from here: its path where the venv is not
    on PATH (``make demo`` does not activate it), relative where it lies below this folder."""
    script = Path(sys.executable).with_name(name)
    if not script.exists() or shutil.which(name) == str(script):
        return name
    return os.path.relpath(script) if script.is_relative_to(Path.cwd()) else str(script)


def ui_lines(experiment_id: str | None, tracking_uri: str | None) -> list[str]:
    """How to open the experiment in the MLflow UI: the command that serves the UI for a local
    store (none for a tracking server, which serves its own), then the page's address."""
    # MLflow 3.17's UI opens the GenAI view unless told, whatever the experiment's kind says
    page = f"#/experiments/{experiment_id}?workflowType=machine_learning"
    if tracking_uri and tracking_uri.startswith(("http://", "https://")):
        return ["Open it in the MLflow UI:", f"  {tracking_uri.rstrip('/')}/{page}"]
    store = tracking_uri or "sqlite:///mlflow.db"  # MLflow's default store
    ui = [command("mlflow"), "ui", "--backend-store-uri", store]  # serves on port UI_PORT
    return [
        "Open it in the MLflow UI (run B's Artifacts tab holds the A-vs-B report):",
        command_lines(shlex.join(ui)),
        f"  then http://127.0.0.1:{UI_PORT}/{page}",
    ]


def main() -> int:
    tracking_uri = os.environ.get("MLFLOW_TRACKING_URI")  # None: MLflow's default, ./mlflow.db
    start = time.monotonic()
    print("mlflow-fingerprint demo: three runs of a small CNN on the digits data (CPU)", flush=True)
    a = train("A", RECIPE, EXPERIMENT, tracking_uri)
    train("A-again", RECIPE, EXPERIMENT, tracking_uri)
    b = train("B", [*RECIPE, "--num-workers", "2"], EXPERIMENT, tracking_uri)
    same = diff("A", "A-again", tracking_uri, experiment=EXPERIMENT)
    differ = diff("A", "B", tracking_uri, experiment=EXPERIMENT)
    logged = log_report(a.run_id, b.run_id, tracking_uri)
    explain = shlex.join([command("fingerprint"), "explain", EXPERIMENT])
    lines = [
        "",
        f"Done in {time.monotonic() - start:.0f}s. The runs are in MLflow experiment {EXPERIMENT}.",
        "What sets its runs apart, across the experiment:",
        f"  {explain}",
        *ui_lines(b.experiment_id, tracking_uri),
    ]
    print("\n".join(lines), flush=True)
    return 0 if (same, differ, logged) == (0, 1, 1) else 1


if __name__ == "__main__":
    sys.exit(main())
