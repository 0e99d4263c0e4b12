"""Train two Keras digits runs (``keras_digits.py``) that differ in one setting, then print
``fingerprint diff`` of the pair: the Keras scenarios' shared driver (docs/design.md, "The
problem").

Each run is its own process, as two runs of a user's script would be: PYTHONHASHSEED, for one,
can only be set before Python starts. Needs TensorFlow (``pip install "mlflow-fingerprint
[tensorflow]"``; the CPU wheel is enough).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from pair import Trained, child_env, diff

SCRIPT = Path(__file__).resolve().parent / "keras_digits.py"
UNSET = None  # an environment value that removes the variable


def train(
    name: str,
    args: Sequence[str],
    env: Mapping[str, str | None],
    experiment: str,
    tracking_uri: str | None,
) -> Trained:
    """One Keras digits run in a fresh interpreter with ``env`` applied (None removes)."""
    cmd = [sys.executable, str(SCRIPT), *args, "--experiment", experiment, "--run-name", name]
    if tracking_uri:
        cmd += ["--tracking-uri", tracking_uri]
    environ = {k: v for k, v in child_env().items() if k not in env}
    environ.update({k: v for k, v in env.items() if v is not None})
    shown = " ".join(f"{k}={v if v is not None else '(unset)'}" for k, v in env.items())
    print(f"  training {name}: {shown} keras_digits.py {' '.join(args)}".rstrip(), flush=True)
    start = time.monotonic()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True, env=environ)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    seconds = time.monotonic() - start
    experiment_id = result.get("experiment_id")
    return Trained(result["run_id"], experiment_id, name, seconds, result["val_error"])


def keras_scenario_main(
    title: str,
    a: Sequence[str],
    b: Sequence[str],
    experiment: str,
    env_a: Mapping[str, str | None] | None = None,
    env_b: Mapping[str, str | None] | None = None,
) -> None:
    """Entry point of a Keras scenario script: train A and B, print the diff of the pair."""
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--tracking-uri", default=os.environ.get("MLFLOW_TRACKING_URI"))
    parser.add_argument("--experiment", default=experiment)
    options = parser.parse_args()
    print(f"== {title}", flush=True)
    runs = [
        train("A", a, env_a or {}, options.experiment, options.tracking_uri),
        train("B", b, env_b or {}, options.experiment, options.tracking_uri),
    ]
    for run in runs:
        print(
            f"  {run.name}: run {run.run_id}  val_error {run.val_error:.4f}  ({run.seconds:.1f}s)"
        )
    code = diff(runs[0].run_id, runs[1].run_id, options.tracking_uri)
    sys.exit(0 if code in (0, 1) else code)
