"""The main job: three digits runs on MLflow's default local store, two diffs, and the A-vs-B
report stored in run B, where the MLflow UI shows it.

A and A' are the same seeded recipe: ``fingerprint diff`` says ``same_results`` (exit 0). B moves
the random augmentation into two unseeded DataLoader workers, a classic reproducibility trap: the
diff names ``num_workers`` (and the missing worker seeding) as the cause and shows the step where
the loss curves part (exit 1). The demo ends with the address of run B's page in the MLflow UI.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

from pair import Trained, diff, log_report, train

EXPERIMENT = "fingerprint-demo"
RECIPE = ["--seed", "0", "--augment", "--epochs", "1", "--max-steps", "80"]
UI_PORT = 5000


def run_page(run: Trained, tracking_uri: str | None) -> str:
    """How to open ``run``'s page in the MLflow UI: the command that serves the UI for a local
    store (none for a tracking server, which serves its own), then the page's address."""
    # MLflow 3.17's UI opens the GenAI view unless told, whatever the experiment's kind says
    path = f"#/experiments/{run.experiment_id}/runs/{run.run_id}?workflowType=machine_learning"
    if tracking_uri and tracking_uri.startswith(("http://", "https://")):
        return f"  {tracking_uri.rstrip('/')}/{path}"
    mlflow = Path(sys.executable).with_name("mlflow")
    command = "mlflow"
    if mlflow.exists():  # the venv's, as the user can type it from here
        inside = mlflow.is_relative_to(Path.cwd())
        command = os.path.relpath(mlflow) if inside else str(mlflow)
    store = tracking_uri or "sqlite:///mlflow.db"  # MLflow's default store
    ui = shlex.join([command, "ui", "--backend-store-uri", store, "--port", str(UI_PORT)])
    return f"  {ui}\nthen open run B's page:\n  http://127.0.0.1:{UI_PORT}/{path}"


def main() -> int:
    tracking_uri = os.environ.get("MLFLOW_TRACKING_URI")  # None: MLflow's default, ./mlflow.db
    start = time.monotonic()
    print(
        "mlflow-fingerprint demo: three runs of a small CNN on the digits data (CPU)\n", flush=True
    )
    a = train("A", RECIPE, EXPERIMENT, tracking_uri)
    a2 = train("A-again", RECIPE, EXPERIMENT, tracking_uri)
    b = train("B", [*RECIPE, "--num-workers", "2", "--no-seed-workers"], EXPERIMENT, tracking_uri)
    same = diff(a.run_id, a2.run_id, tracking_uri)
    differ = diff(a.run_id, b.run_id, tracking_uri)
    logged = log_report(a.run_id, b.run_id, tracking_uri)
    print(
        f"\nDone in {time.monotonic() - start:.0f}s. Exit statuses: A vs A-again {same}, "
        f"A vs B {differ}.\nIn the MLflow UI, run B's page shows its fingerprint.* tags, and its "
        f"Artifacts tab the A-vs-B report (fingerprint/diff/). Start the UI:\n"
        f"{run_page(b, tracking_uri)}",
        flush=True,
    )
    return 0 if (same, differ, logged) == (0, 1, 1) else 1


if __name__ == "__main__":
    sys.exit(main())
