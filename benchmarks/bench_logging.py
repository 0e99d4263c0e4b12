"""Metric logging cost: ``mfp.log_metrics`` against ``mlflow.log_metric``, synchronous and
``synchronous=False``, into the same run of the same store (a fresh local sqlite store by
default, or ``--tracking-uri``).

Two figures per method:

- *caller*: the time one call takes on the training thread: the mean (what the training loop
  pays, including stalls while a background thread holds the GIL and the garbage collections the
  method's allocations bring on) and the median (the call). Each method starts from a collected
  heap (``gc.collect()`` first), so none pays for the garbage another left;
- *durable*: the time from the first call until all N values are stored by MLflow (for
  ``mfp.log_metrics``: every value acknowledged by the store, not merely spooled to disk; the
  time to the fsync'd spool is shown beside it).

All three log into one ``mfp.fingerprinted`` run (which makes it MLflow's active run, as
``mlflow.start_run`` would). MLflow's two paths cost milliseconds per value (the asynchronous one
on its background thread), so N of each would take minutes: they are timed on ``--sync-sample``
and ``--async-sample`` values and their N-value totals extrapolated linearly (said in the output),
unless ``--full``. Runs in about a minute on 2 cores.

    python benchmarks/bench_logging.py [--values 10000] [--sync-sample 300]
                                       [--async-sample 1000] [--full]
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Result:
    name: str
    calls: int
    caller_s: float  # mean per call on the caller's thread, stalls included
    median_s: float  # median per call: the call itself, without the stalls
    durable_s: float  # for all --values values, first call to stored
    note: str = ""


def timed_calls(log: Callable[[int], None], calls: int) -> tuple[float, float]:
    """Run ``log(step)`` for ``calls`` steps: (wall seconds, median seconds per call)."""
    each = []
    gc.collect()
    t0 = time.perf_counter()
    for step in range(calls):
        start = time.perf_counter_ns()
        log(step)
        each.append(time.perf_counter_ns() - start)
    return time.perf_counter() - t0, statistics.median(each) / 1e9


def bench_sync(n: int, sample: int) -> Result:
    import mlflow

    calls = min(n, sample)
    wall, median = timed_calls(lambda step: mlflow.log_metric("sync", step * 0.1, step=step), calls)
    note = "" if calls == n else f"timed on {calls} calls, total extrapolated"
    return Result("mlflow.log_metric", calls, wall / calls, median, wall * n / calls, note)


def bench_async(n: int, sample: int) -> Result:
    import mlflow

    calls = min(n, sample)
    t0 = time.perf_counter()
    wall, median = timed_calls(
        lambda step: mlflow.log_metric("async", step * 0.1, step=step, synchronous=False), calls
    )
    mlflow.flush_async_logging()
    total = (time.perf_counter() - t0) * n / calls
    note = "" if calls == n else f"timed on {calls} values, total extrapolated"
    name = "mlflow.log_metric(synchronous=False)"
    return Result(name, calls, wall / calls, median, total, note)


def bench_mfp(n: int, run: Any) -> tuple[Result, float]:
    import mlflow_fingerprint as mfp
    from mlflow_fingerprint.run import current

    writer: Any = current.current()  # the run's writer, to time the spool separately
    assert run.flush(60)
    t0 = time.perf_counter()
    wall, median = timed_calls(lambda step: mfp.log_metrics({"mfp": step * 0.1}, step=step), n)
    writer.drain()
    spooled = time.perf_counter() - t0
    if not run.flush(120):
        raise SystemExit("mfp.log_metrics: the store did not acknowledge every value in 120 s")
    return Result("mfp.log_metrics", n, wall / n, median, time.perf_counter() - t0), spooled


def check_stored(run_id: str, expected: dict[str, int]) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    for key, n in expected.items():
        stored = len(client.get_metric_history(run_id, key))
        if stored != n:
            raise SystemExit(f"{key}: {stored} of {n} values stored")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=10_000)
    parser.add_argument("--sync-sample", type=int, default=300)
    parser.add_argument("--async-sample", type=int, default=1000)
    parser.add_argument("--full", action="store_true", help="time all N values of every method")
    parser.add_argument("--tracking-uri", help="default: a fresh sqlite store in a temp dir")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-logging-"))
    os.environ["MLFLOW_FINGERPRINT_SPOOL"] = str(workdir / "spool")
    home = Path.cwd()
    os.chdir(workdir)  # a sqlite store keeps new experiments' artifacts under ./mlruns
    try:
        import mlflow

        import mlflow_fingerprint as mfp

        uri = args.tracking_uri or f"sqlite:///{workdir / 'mlflow.db'}"
        n = args.values
        # MLflow's own logging (the sync and async baselines) goes to MLflow's tracking URI: the
        # decorator's ``tracking_uri=`` is the run's alone and does not change it.
        mlflow.set_tracking_uri(uri)
        with mfp.fingerprinted(experiment="bench-logging", tracking_uri=uri) as run:
            mlflow.log_metric("warm-up", 0.0)
            sync = bench_sync(n, n if args.full else args.sync_sample)
            async_ = bench_async(n, n if args.full else args.async_sample)
            ours, spooled = bench_mfp(n, run)
        check_stored(run.run_id, {"sync": sync.calls, "async": async_.calls, "mfp": n})
    finally:
        os.chdir(home)
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"store: {uri}   values: {n}   run: {run.run_id}")
    print(f"{'caller µs per call':>57}")
    print(f"{'method':40} {'median':>8} {'mean':>8} {'durable s':>10}")
    for r in (sync, async_, ours):
        note = f"  ({r.note})" if r.note else ""
        print(
            f"{r.name:40} {r.median_s * 1e6:8.2f} {r.caller_s * 1e6:8.2f} {r.durable_s:10.3f}{note}"
        )
    print(f"{'  (mfp.log_metrics to the fsync-ed spool)':40} {'':8} {'':8} {spooled:10.3f}")
    print("ratios, each against mfp.log_metrics (mean: stalls included):")
    for r in (sync, async_):
        print(
            f"  {r.name:38} median {r.median_s / ours.median_s:7.0f}x   "
            f"mean {r.caller_s / ours.caller_s:7.0f}x   "
            f"durable {r.durable_s / ours.durable_s:5.1f}x"
        )


if __name__ == "__main__":
    main()
