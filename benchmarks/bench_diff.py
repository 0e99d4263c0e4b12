"""How long ``fingerprint diff`` takes on long histories, against the raw MLflow history fetch.

Two runs in a fresh local sqlite store, each with a fingerprint and ``--metrics`` metrics of
``--steps`` steps (the second run leaves the first at the middle step). Measured, median of
``--repeat``:

1. ``fetch``: ``MlflowClient.get_metric_history`` of every metric of both runs (the floor any
   client of the public API pays to see the histories), in-process, after a warm-up call;
2. ``diff``: ``mfp.diff(a, b)`` in-process, everything included (runs, fingerprint artifacts,
   histories, comparison, replicate search); once more with the direct sqlite read turned off,
   i.e. through the store's paged ``get_metric_history`` as for any other store;
3. the same two as whole processes (``fingerprint diff ... --format json`` against a Python
   process that imports mlflow and fetches the same histories);
4. ``fingerprint diff a.json b.json`` as a whole process, and the heavy modules it imported.

    .venv/bin/python benchmarks/bench_diff.py [--steps 100000] [--metrics 3] [--repeat 3]

Prints a table and, with ``--json FILE``, writes the numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FINGERPRINT = str(Path(sys.executable).with_name("fingerprint"))
BATCH = 1000
TARGET_RATIO = 1.5


def make_runs(uri: str, artifacts: Path, steps: int, metrics: int) -> tuple[str, str, Path]:
    """Two runs with fingerprints and long histories; returns their ids and a fingerprint file."""
    import numpy as np
    from mlflow import MlflowClient
    from mlflow.entities import Metric, RunTag

    import mlflow_fingerprint as mfp
    from mlflow_fingerprint import layout

    record = mfp.capture().to_dict()
    client = MlflowClient(uri)
    experiment = client.create_experiment("bench", artifact_location=artifacts.as_uri())
    names = [f"metric{i}" for i in range(metrics)]
    ids = []
    for label, shift_at in (("a", None), ("b", steps // 2)):
        run_id = client.create_run(experiment, run_name=label).info.run_id
        client.log_text(run_id, json.dumps(record), layout.FINGERPRINT_ARTIFACT)
        client.log_batch(
            run_id,
            tags=[
                RunTag(layout.HASH_TAGS[k], record["hashes"][k])
                for k in ("env", "numerics", "recipe")
            ],
        )
        for k, name in enumerate(names):
            values = np.exp(-np.arange(steps) / (steps / 5)) + 0.01 * k
            if shift_at is not None:
                values[shift_at:] += 1e-6
            batch = [Metric(name, float(v), 1_700_000_000_000 + i, i) for i, v in enumerate(values)]
            for i in range(0, steps, BATCH):
                client.log_batch(run_id, metrics=batch[i : i + BATCH])
        client.set_terminated(run_id)
        ids.append(run_id)
    path = artifacts.parent / "a.json"
    path.write_text(json.dumps(record))
    return ids[0], ids[1], path


@contextlib.contextmanager
def store_api_only() -> Iterator[None]:
    """Turn off the direct sqlite read, so histories come through the store's paged API (the
    path every non-sqlite store takes)."""
    from mlflow_fingerprint.tracking import history

    original = history.sqlite_file
    history.sqlite_file = lambda uri: None
    try:
        yield
    finally:
        history.sqlite_file = original


def median_time(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_process(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False)


FETCH_SCRIPT = """
import sys
from mlflow import MlflowClient
client = MlflowClient(sys.argv[1])
for run_id in sys.argv[2:4]:
    for key in sys.argv[4:]:
        client.get_metric_history(run_id, key)
"""

IMPORTS_SCRIPT = """
import sys
from mlflow_fingerprint.cli.main import main
rc = main(["diff", sys.argv[1], sys.argv[2], "--format", "json", "--output", "/dev/null"])
print(sorted(m for m in ("torch", "mlflow", "sqlalchemy", "numpy") if m in sys.modules))
"""


def bench(steps: int, metrics: int, repeat: int, keep: Path | None) -> dict[str, Any]:
    from mlflow import MlflowClient

    import mlflow_fingerprint as mfp

    workdir = Path(tempfile.mkdtemp(prefix="bench-diff-")) if keep is None else keep
    try:
        uri = f"sqlite:///{workdir / 'mlflow.db'}"
        start = time.perf_counter()
        a, b, json_file = make_runs(uri, workdir / "artifacts", steps, metrics)
        setup_s = time.perf_counter() - start
        keys = [f"metric{i}" for i in range(metrics)]
        client = MlflowClient(uri)

        def fetch() -> None:
            for run_id in (a, b):
                for key in keys:
                    client.get_metric_history(run_id, key)

        report = mfp.diff(a, b, tracking_uri=uri)  # warm-up, and the check below
        fetch()
        fetch_s = median_time(fetch, repeat)
        diff_s = median_time(lambda: mfp.diff(a, b, tracking_uri=uri), repeat)
        with store_api_only():
            diff_store_s = median_time(lambda: mfp.diff(a, b, tracking_uri=uri), repeat)
        fetch_proc_s = median_time(
            lambda: run_process([sys.executable, "-c", FETCH_SCRIPT, uri, a, b, *keys]), repeat
        )
        diff_proc_s = median_time(
            lambda: run_process(
                [FINGERPRINT, "diff", a, b, "--tracking-uri", uri, "--format", "json"]
            ),
            repeat,
        )
        other = workdir / "b.json"
        other.write_text(json_file.read_text().replace('"requested": null', '"requested": 1'))
        json_diff_s = median_time(
            lambda: run_process([FINGERPRINT, "diff", str(json_file), str(other)]), repeat
        )
        imported = run_process(
            [sys.executable, "-c", IMPORTS_SCRIPT, str(json_file), str(other)]
        ).stdout.strip()
        divergence = {m.name: m.first_divergence_step for m in report.metrics}
        return {
            "steps": steps,
            "metrics": metrics,
            "repeat": repeat,
            "setup_s": setup_s,
            "fetch_s": fetch_s,
            "diff_s": diff_s,
            "ratio": diff_s / fetch_s,
            "diff_store_api_s": diff_store_s,
            "store_api_ratio": diff_store_s / fetch_s,
            "fetch_process_s": fetch_proc_s,
            "diff_process_s": diff_proc_s,
            "process_ratio": diff_proc_s / fetch_proc_s,
            "json_diff_process_s": json_diff_s,
            "json_diff_imports": imported,
            "first_divergence": divergence,
            "verdict": report.verdict,
        }
    finally:
        if keep is None:
            shutil.rmtree(workdir, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100_000)
    p.add_argument("--metrics", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--keep", type=Path, help="build the store in this directory and keep it")
    p.add_argument("--json", type=Path, help="also write the numbers here")
    args = p.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    result = bench(args.steps, args.metrics, args.repeat, args.keep)
    rows = [
        ("histories", f"{args.metrics} metrics x {args.steps:,} steps x 2 runs"),
        ("store setup", f"{result['setup_s']:.1f} s"),
        ("get_metric_history (in-process)", f"{result['fetch_s']:.3f} s"),
        ("mfp.diff (in-process)", f"{result['diff_s']:.3f} s"),
        ("ratio diff / fetch", f"{result['ratio']:.2f} (target <= {TARGET_RATIO})"),
        ("mfp.diff, store API only (no sqlite read)", f"{result['diff_store_api_s']:.3f} s"),
        ("ratio, store API only", f"{result['store_api_ratio']:.2f}"),
        ("fetch, whole process", f"{result['fetch_process_s']:.3f} s"),
        ("fingerprint diff, whole process", f"{result['diff_process_s']:.3f} s"),
        ("ratio, whole processes", f"{result['process_ratio']:.2f}"),
        ("fingerprint diff a.json b.json", f"{result['json_diff_process_s']:.3f} s"),
        ("heavy modules it imported", result["json_diff_imports"]),
        ("first divergence", json.dumps(result["first_divergence"])),
    ]
    width = max(len(r[0]) for r in rows)
    print("\n".join(f"{k.ljust(width)}  {v}" for k, v in rows))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0 if result["ratio"] <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
