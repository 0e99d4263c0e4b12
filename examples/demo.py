"""The main job: three digits runs on MLflow's default local store, and two diffs.

A and A' are the same seeded recipe: ``fingerprint diff`` says ``same_results`` (exit 0). B moves
the random augmentation into two unseeded DataLoader workers, the scenario of seeds/003: the diff
names ``num_workers`` (and the missing worker seeding) as the cause and shows the step where the
loss curves part (exit 1).
"""

from __future__ import annotations

import os
import sys
import time

from pair import diff, train

EXPERIMENT = "fingerprint-demo"
RECIPE = ["--seed", "0", "--augment", "--epochs", "1", "--max-steps", "80"]


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
    store = tracking_uri or "sqlite:///mlflow.db"
    print(
        f"\nDone in {time.monotonic() - start:.0f}s. Exit statuses: A vs A-again {same}, "
        f"A vs B {differ}.\nSee the fingerprint.* tags in the MLflow UI:\n"
        f"  .venv/bin/mlflow ui --backend-store-uri {store}\n"
        f"then open http://127.0.0.1:5000 and the experiment '{EXPERIMENT}'.",
        flush=True,
    )
    return 0 if (same, differ) == (0, 1) else 1


if __name__ == "__main__":
    sys.exit(main())
