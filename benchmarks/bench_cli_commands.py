"""What a user waits for a CLI answer: ``fingerprint diff``, ``show``, ``find``, ``audit`` as whole
processes, against ``python -c "import mlflow"`` and against what MLflow itself costs to read one
run of the same store.

Two fingerprinted runs (a few metric values each, no training) are logged into a fresh sqlite
store in a temp dir, and their fingerprints written to two files. Then, ``--repeats`` rounds, the
commands run in turn (so whatever else the machine does slows each alike):

- ``import mlflow``: the baseline the issue names;
- ``mlflow floor``: a process that imports mlflow, opens the store with ``MlflowClient``, gets
  run A and downloads its fingerprint artifact: the least any MLflow client pays to look at a
  run here (on a sqlite store that includes MLflow's SQLAlchemy store and its schema check);
- ``fingerprint diff A B`` / ``show A`` / ``find A`` / ``audit``, ``diff a.json b.json`` and
  ``fingerprint --help``.

Medians are printed with the ratio to ``import mlflow`` and to the floor, and, per command, the
``-X importtime`` self time of this package's modules (our own import work).

    python benchmarks/bench_cli_commands.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FINGERPRINT = str(Path(sys.executable).with_name("fingerprint"))
MAKE_RUNS = """
import sys
import mlflow_fingerprint as mfp
for i in range(2):
    with mfp.fingerprinted(experiment="bench-cli", tracking_uri=sys.argv[1]) as run:
        for step in range(20):
            mfp.log_metrics({"loss": 1.0 / (step + 1 + i)}, step=step)
    print(run.run_id)
"""
FLOOR = """
import sys, tempfile
from mlflow import MlflowClient
client = MlflowClient(sys.argv[1])
run = client.get_run(sys.argv[2])
with tempfile.TemporaryDirectory() as tmp:
    client.download_artifacts(run.info.run_id, "fingerprint.json", tmp)
"""


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, env=env, check=False)
    if done.returncode not in (0, 1):  # diff exits 1 when the runs differ
        raise SystemExit(f"{cmd}: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
    return time.perf_counter() - start


def own_import_ms(cmd: list[str], env: dict[str, str]) -> float:
    """The ``-X importtime`` self time of ``mlflow_fingerprint`` modules in ``cmd``'s process."""
    argv = [sys.executable, "-X", "importtime", *cmd[1:]]
    if cmd[0] == FINGERPRINT:
        argv = [sys.executable, "-X", "importtime", "-m", "mlflow_fingerprint.cli", *cmd[1:]]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    total = 0
    for line in done.stderr.splitlines():
        fields = [f.strip() for f in line.removeprefix("import time:").split("|")]
        if len(fields) == 3 and fields[2].startswith("mlflow_fingerprint") and fields[0].isdigit():
            total += int(fields[0])
    return total / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    try:
        uri = f"sqlite:///{workdir / 'mlflow.db'}"
        env = {
            **os.environ,
            "MLFLOW_TRACKING_URI": uri,
            "MLFLOW_FINGERPRINT_SPOOL": str(workdir / "spool"),
        }
        made = subprocess.run(
            [sys.executable, "-c", MAKE_RUNS, uri],
            capture_output=True,
            text=True,
            env=env,
            cwd=workdir,
            check=True,
        )
        a, b = made.stdout.split()[-2:]
        files = []
        for name, run_id in (("a", a), ("b", b)):
            path = workdir / f"{name}.json"
            show = [FINGERPRINT, "show", run_id, "--format", "json", "-o", str(path)]
            subprocess.run(show, env=env, check=True, capture_output=True)
            files.append(str(path))
        cli = [FINGERPRINT]
        commands = {
            "python -c 'import mlflow'": [sys.executable, "-c", "import mlflow"],
            "mlflow floor (client, get_run, artifact)": [sys.executable, "-c", FLOOR, uri, a],
            "fingerprint diff A B": [*cli, "diff", a, b],
            "fingerprint show A": [*cli, "show", a],
            "fingerprint find A": [*cli, "find", a],
            "fingerprint audit": [*cli, "audit"],
            "fingerprint diff a.json b.json": [*cli, "diff", *files],
            "fingerprint --help": [*cli, "--help"],
        }
        for cmd in commands.values():  # warm the page cache and the .pyc files
            timed(cmd, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeats):
            for name, cmd in commands.items():
                times[name].append(timed(cmd, env))
        own = {name: own_import_ms(cmd, env) for name, cmd in commands.items()}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    medians = {name: statistics.median(ts) for name, ts in times.items()}
    base = medians["python -c 'import mlflow'"]
    floor = medians["mlflow floor (client, get_run, artifact)"]
    load = os.getloadavg()[0]
    print(f"sqlite store, median of {args.repeats} (commands alternating; load {load:.1f})")
    print(f"{'command':42} {'s':>7} {'x import mlflow':>16} {'x floor':>8} {'own imports ms':>15}")
    for name, median in medians.items():
        print(
            f"{name:42} {median:7.2f} {median / base:16.2f} {median / floor:8.2f} {own[name]:15.0f}"
        )


if __name__ == "__main__":
    main()
