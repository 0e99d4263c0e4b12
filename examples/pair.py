"""Train two digits runs that differ in one setting, then print ``fingerprint diff`` of the pair.

Each run is its own process, as two runs of a user's script would be: an unseeded process then
really draws a fresh seed, and nothing one run set leaks into the other. Shared by the scenario
scripts beside this file and by the demo.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DIGITS = HERE / "digits.py"


@dataclass(frozen=True)
class Trained:
    run_id: str
    experiment_id: str | None
    name: str
    seconds: float
    val_error: float


def live() -> bool:
    """A person watches the output: a step counter is drawn in place. Piped, each run gets one
    line instead, and the counter's carriage returns never reach a log."""
    return sys.stdout.isatty() and sys.stderr.isatty()


def child_env() -> dict[str, str]:
    """The environment of the training and diff processes: MLflow's INFO lines (creating the
    store's tables, its migrations) left out unless the user asked for a log level, and the
    decorator's closing line too (this script prints the diff commands itself)."""
    return {"MLFLOW_LOGGING_LEVEL": "WARNING", "MLFLOW_FINGERPRINT_QUIET": "1", **os.environ}


def train(
    name: str, args: Sequence[str], experiment: str, tracking_uri: str | None, ranks: int = 1
) -> Trained:
    """One digits run in a fresh interpreter (``ranks`` > 1: a ``torchrun`` job of that many
    processes, one MLflow run). On a terminal its step counter passes through to our stderr;
    piped, the run's line is finished when it is done."""
    launcher = [sys.executable]
    if ranks > 1:
        launcher += ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}"]
    cmd = [*launcher, str(DIGITS), *args, "--experiment", experiment, "--run-name", name]
    if live():
        cmd.append("--progress")
    if tracking_uri:
        cmd += ["--tracking-uri", tracking_uri]
    on = f" on {ranks} ranks" if ranks > 1 else ""
    line = f"  training {name}{on}: digits.py {' '.join(args)}"
    print(line, end="\n" if live() else "", flush=True)
    start = time.monotonic()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True, env=child_env())
    seconds = time.monotonic() - start
    if live():
        print("\r" + " " * 40 + "\r", end="", file=sys.stderr, flush=True)
    else:
        print(f" ... done in {seconds:.0f}s", flush=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return Trained(
        result["run_id"], result.get("experiment_id"), name, seconds, result["val_error"]
    )


def diff(
    a: str, b: str, tracking_uri: str | None, fmt: str = "text", experiment: str | None = None
) -> int:
    """``fingerprint diff A B`` as a user types it (by run names where ``experiment`` is
    given); returns its exit status (0 same, 1 differ)."""
    cmd = [sys.executable, "-m", "mlflow_fingerprint.cli", "diff", a, b, "--format", fmt]
    named = ["-e", experiment] if experiment else []
    if tracking_uri:
        cmd += ["--tracking-uri", tracking_uri]
    print(f"\n$ fingerprint diff {' '.join([a, b, *named])}", flush=True)
    return subprocess.run([*cmd, *named], check=False, env=child_env()).returncode


def log_report(a: str, b: str, tracking_uri: str | None) -> int:
    """``fingerprint diff A B --format html --log-to B``, quietly: the report stored in run B,
    where the MLflow UI's artifact viewer shows it; returns the diff's exit status."""
    cmd = [sys.executable, "-m", "mlflow_fingerprint.cli", "diff", a, b, "--format", "html"]
    cmd += ["--log-to", b]
    if tracking_uri:
        cmd += ["--tracking-uri", tracking_uri]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=child_env())
    if done.returncode not in (0, 1):  # the report could not be stored: say why
        print(done.stderr.strip(), file=sys.stderr, flush=True)
    return done.returncode


def run_pair(
    title: str,
    a: Sequence[str],
    b: Sequence[str],
    experiment: str,
    tracking_uri: str | None = None,
    b_ranks: int = 1,
) -> int:
    """Train A and B (B on ``b_ranks`` processes), print the diff, return its exit status."""
    tracking_uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    print(f"== {title}", flush=True)
    run_a = train("A", a, experiment, tracking_uri)
    run_b = train("B", b, experiment, tracking_uri, ranks=b_ranks)
    for run in (run_a, run_b):
        print(
            f"  {run.name}: run {run.run_id}  val_error {run.val_error:.4f}  ({run.seconds:.1f}s)"
        )
    return diff(run_a.run_id, run_b.run_id, tracking_uri)


def scenario_main(
    title: str, a: Sequence[str], b: Sequence[str], experiment: str, b_ranks: int = 1
) -> None:
    """Entry point of a scenario script: ``--tracking-uri`` is the only option."""
    import argparse

    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--tracking-uri", default=None)
    parser.add_argument("--experiment", default=experiment)
    args = parser.parse_args()
    code = run_pair(title, a, b, args.experiment, args.tracking_uri, b_ranks)
    sys.exit(0 if code in (0, 1) else code)
