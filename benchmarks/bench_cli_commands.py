"""What a user waits for a CLI answer: ``fingerprint diff``, ``show``, ``find``, ``audit`` as whole
processes, against ``python -c "import mlflow"`` and against what MLflow itself costs to read one
run of the same store.

Two fingerprinted runs (a few metric values each, no training) are logged into a fresh store in a
temp dir, and their fingerprints written to two files: a sqlite file, then a real ``mlflow server``
on 127.0.0.1 (sqlite rows, artifacts proxied), which the commands read through MLflow's REST API
without importing MLflow (``tracking/rest.py``). Then, ``--repeats`` rounds, the
commands run in turn (so whatever else the machine does slows each alike):

- ``import mlflow``: the baseline the issue names;
- ``mlflow floor``: a process that imports mlflow, opens the store with ``MlflowClient``, gets
  run A and downloads its fingerprint artifact: the least any MLflow client pays to look at a
  run here (on a sqlite store that includes MLflow's SQLAlchemy store and its schema check; on a
  server, its HTTP requests);
- ``mlflow floor, collector held off``: the same process with the garbage collector as the
  ``fingerprint`` process has it (off while it runs, everything frozen at its end:
  ``cli/collector.py``), which any MLflow script could do too;
- ``fingerprint diff A B`` / ``show A`` / ``find A`` / ``audit``, ``diff a.json b.json`` and
  ``fingerprint --help``.

Medians are printed with the ratio to ``import mlflow`` and to the floor, and, per command, the
``-X importtime`` self time of this package's modules (our own import work).

    python benchmarks/bench_cli_commands.py [--repeats 5] [--store sqlite|server]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
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

FLOOR_HELD = f"import gc\ngc.disable()\n{FLOOR}gc.freeze()\n"


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


def serve(workdir: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """A real ``mlflow server`` (sqlite rows, artifacts proxied) on a free local port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port)),
            *("--workers", "1", "--backend-store-uri", f"sqlite:///{workdir / 'server.db'}"),
            *("--artifacts-destination", str(workdir / "served")),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its workers and job consumers go with it (``stop``)
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2):
                return server, url
        except OSError:
            time.sleep(0.5)
    stop(server)
    raise SystemExit(f"mlflow server on {url} did not answer in 120 s")


def stop(server: subprocess.Popen[bytes]) -> None:
    """The server and every process it started."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGKILL)
    server.wait()


def measure(uri: str, workdir: Path, repeats: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median seconds and own import milliseconds of each command on the store at ``uri``."""
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": uri,
        "MLFLOW_FINGERPRINT_SPOOL": str(workdir / "spool"),
        # no run description: the second run's would be a diff running beside the timings
        "MLFLOW_FINGERPRINT_DESCRIBE": "0",
    }
    made = subprocess.run(
        [sys.executable, "-c", MAKE_RUNS, uri],
        capture_output=True,
        text=True,
        env=env,
        cwd=workdir,
        check=True,
    )
    a, b = re.findall(r"^[0-9a-f]{32}$", made.stdout, re.MULTILINE)[-2:]
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
        "mlflow floor, collector held off": [sys.executable, "-c", FLOOR_HELD, uri, a],
        "fingerprint diff A B": [*cli, "diff", a, b],
        "fingerprint show A": [*cli, "show", a],
        "fingerprint find A": [*cli, "find", a],
        "fingerprint audit": [*cli, "audit"],
        "fingerprint diff a.json b.json": [*cli, "diff", *files],
        "fingerprint --help": [*cli, "--help"],
    }
    # Warm the page cache and the .pyc files (where PYTHONDONTWRITEBYTECODE is set, Python writes
    # none: `make bench` compiles the package first, as an install has it).
    for cmd in commands.values():
        timed(cmd, env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, cmd in commands.items():
            times[name].append(timed(cmd, env))
    own = {name: own_import_ms(cmd, env) for name, cmd in commands.items()}
    return {name: statistics.median(ts) for name, ts in times.items()}, own


def report(title: str, medians: dict[str, float], own: dict[str, float]) -> None:
    base = medians["python -c 'import mlflow'"]
    floor = medians["mlflow floor (client, get_run, artifact)"]
    print(f"{title} (commands alternating; load {os.getloadavg()[0]:.1f})")
    print(f"{'command':42} {'s':>7} {'x import mlflow':>16} {'x floor':>8} {'own imports ms':>15}")
    for name, median in medians.items():
        print(
            f"{name:42} {median:7.2f} {median / base:16.2f} {median / floor:8.2f} {own[name]:15.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--store", choices=("sqlite", "server"), action="append", help="default: both"
    )
    args = parser.parse_args()
    for kind in args.store or ("sqlite", "server"):
        workdir = Path(tempfile.mkdtemp(prefix="bench-cli-"))
        server = None
        try:
            if kind == "server":
                # no GenAI job consumers: seven more processes importing MLflow, idle here
                env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
                server, uri = serve(workdir, env)
            else:
                uri = f"sqlite:///{workdir / 'mlflow.db'}"
            medians, own = measure(uri, workdir, args.repeats)
        finally:
            if server is not None:
                stop(server)
            shutil.rmtree(workdir, ignore_errors=True)
        report(f"{kind} store, median of {args.repeats}", medians, own)


if __name__ == "__main__":
    main()
