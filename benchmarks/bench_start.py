"""Start-up of a fingerprinted training: from calling the decorated ``train()`` to its first line,
against a plain ``mlflow.start_run()`` (the provider off: ``MLFLOW_FINGERPRINT_DISABLE=1``), and the
resident memory each adds, in fresh processes on a fresh sqlite store.

Each process imports its framework (torch, or Keras on TensorFlow with ``--framework keras``),
mlflow and this package first (imports are the program's), then measures the time to the first line
of the run's body, the process's CPU time over it (every thread's: the run's writer threads and
probes included, git's own processes not), and the growth of its resident set (``/proc/self/statm``)
from before the run starts to that line. The CPU time varies less than the wall time when the
machine's speed drifts. The two kinds alternate, ``--repeats`` each; medians are printed with the
difference (goals: <= 50 ms, <= 50 MB). What applying the decorator costs (where the program is
imported: the package's run, capture and tracking modules load there) is printed apart: a program
pays it once, before ``train()`` is called. A Keras program shows what the fingerprint costs a
program that never imports torch. Run descriptions are off (``MLFLOW_FINGERPRINT_DESCRIBE=0``): each
fingerprinted run's end would start a comparison process running beside the next timed one,
whichever kind it is. A run that did not start (a failed start skips the work being timed) stops
the benchmark with what the process printed.

    python benchmarks/bench_start.py [--repeats 3] [--framework torch|keras]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAM = """
import json, os, sys, time
if sys.argv[3] == "keras":
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import keras
else:
    import torch
import mlflow
import mlflow_fingerprint as mfp

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

uri, kind = sys.argv[1], sys.argv[2]
mlflow.set_tracking_uri(uri)
mlflow.set_experiment("bench-start")  # the store is opened before either kind starts
seen = {}

def first_line():
    seen["t"], seen["cpu"], seen["rss"] = time.perf_counter(), time.process_time(), rss()
    seen["run"] = mlflow.active_run() is not None  # a start that failed is not a start

if kind == "fingerprinted":
    decorating = time.perf_counter()
    @mfp.fingerprinted(experiment="bench-start", tracking_uri=uri)
    def train():
        first_line()
    seen["decorate"] = time.perf_counter() - decorating
    before, cpu, start = rss(), time.process_time(), time.perf_counter()
    train()
else:
    before, cpu, start = rss(), time.process_time(), time.perf_counter()
    with mlflow.start_run():
        first_line()
print(json.dumps({
    "s": seen["t"] - start, "cpu": seen["cpu"] - cpu, "mb": (seen["rss"] - before) / 2**20,
    "run": seen["run"], "decorate": seen.get("decorate", 0.0),
}))
"""


def once(kind: str, uri: str, env: dict[str, str], framework: str) -> dict[str, float]:
    if kind == "plain":
        env = {**env, "MLFLOW_FINGERPRINT_DISABLE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM, uri, kind, framework],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not result["run"]:  # timing a start that gave up (and skipped its work) would flatter it
        raise SystemExit(f"the {kind} run did not start: {out.stderr.strip()[-500:]}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--framework", choices=("torch", "keras"), default="torch")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-start-"))
    try:
        uri = f"sqlite:///{workdir / 'mlflow.db'}"
        # No run description: a run's end starts a detached process that compares it with the
        # run before (seconds of CPU), which would still be running beside the next process.
        env = {
            **os.environ,
            "MLFLOW_FINGERPRINT_SPOOL": str(workdir / "spool"),
            "MLFLOW_FINGERPRINT_DESCRIBE": "0",
        }
        once("plain", uri, env, args.framework)  # creates the store: neither kind pays for it
        runs: dict[str, list[dict[str, float]]] = {"plain": [], "fingerprinted": []}
        for _ in range(args.repeats):
            for kind, results in runs.items():
                results.append(once(kind, uri, env, args.framework))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    medians = {
        kind: tuple(statistics.median(r[k] for r in rs) for k in ("s", "cpu", "mb"))
        for kind, rs in runs.items()
    }
    load = os.getloadavg()[0]
    print(f"{args.framework}: median of {args.repeats} fresh processes each (load {load:.1f})")
    for kind, (seconds, cpu, mb) in medians.items():
        print(
            f"  {kind:14} to the first line {seconds * 1e3:8.1f} ms (CPU {cpu * 1e3:6.1f} ms)"
            f"   resident +{mb:6.1f} MB"
        )
    (ps, pc, pm), (fs, fc, fm) = medians["plain"], medians["fingerprinted"]
    print(
        f"  added by the fingerprint: {(fs - ps) * 1e3:.1f} ms (CPU {(fc - pc) * 1e3:.1f} ms), "
        f"{fm - pm:.1f} MB (goals 50, 50)"
    )
    decorate = statistics.median(r["decorate"] for r in runs["fingerprinted"])
    print(
        f"  and once, where the program applies the decorator: {decorate * 1e3:.1f} ms "
        "(the package's run modules load there, before train() is called)"
    )


if __name__ == "__main__":
    main()
