"""``explain`` over 1,000 to 100,000 runs, against one plain ``search_runs`` paging of the same
runs, on a real ``mlflow server`` with PostgreSQL or sqlite rows, and on a local sqlite store.

The runs are built from recorded fingerprints (``tests/support/explain_runs.py``: an A100, an
H100 and an L4 through the replays of their NVML readings, and this CPU machine's capture; 200
configurations x ``runs / 200`` seeds; each run's metric from a known model). They are written
fast, straight into the store's tables and artifact folder (``write_runs_sql``: one multi-row
insert per table per 2,000 runs), so a 100,000-run history takes minutes to make, not hours of
REST calls. The stores:

- ``postgres``: ``mlflow server --workers 2`` on a throwaway PostgreSQL 15 cluster
  (``tests/support/postgres.py``), artifacts proxied by the server (``mlflow-artifacts:``);
- ``server``: the same server on a sqlite database;
- ``sqlite``: that sqlite database read as a local store (``sqlite:///``), artifacts in a local
  folder (written through a server that gives runs a ``file:`` root).

Each figure is measured in a fresh process (imports excluded from the time, as the reads are
what grows with the runs: MLflow's too where ``explain`` reads through ``MlflowClient``, a local
store, as the search's are), alternately, median of ``--repeat``:

1. ``search``: ``MlflowClient.search_runs`` of the experiment's runs, every page, one after
   another: the floor any client pays to see the runs, their params, tags and metrics;
2. ``explain``: ``mfp.explain(experiment)`` as the CLI runs it (a server read through the REST
   reader, MLflow not imported): the search, the records, the analysis (bootstrap included);
3. ``cached``: ``explain`` again with the records read by the one before it in the cache
   beside the spool (each cold ``explain`` gets a new spool folder);
4. ``explain (mlflow)``: the same with MLflow imported first, read through ``MlflowClient``
   (the report must be the same, from each reader and from the cache; the time is beside);
5. the peak memory (max RSS) of each process.

Also, on the server: ``GET /health`` on a reused connection through the REST reader (which
acknowledges each answer at once) against a plain ``requests`` session, which waits out the
delayed ACK of an answer the server writes in two pieces.

    .venv/bin/python benchmarks/bench_explain.py [--runs 1000,10000,100000] [--repeat 3]
                        [--stores postgres,server,sqlite] [--json FILE] [--store DIR]

Exit status 1 if ``explain`` takes more than ``--limit`` (default 1.3) times one paging, or the
report does not name the learning rate first (the model says it matters most).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

from support.explain_runs import iter_cluster_runs, write_runs_sql  # noqa: E402
from support.mlflow_team import running_server  # noqa: E402

EXPERIMENT = "cluster"
CONFIGURATIONS = 200

# One measurement, in a fresh interpreter: prints JSON {seconds, peak_mib, ...} on its last line.
CHILD = """
import json, sys, time
what, uri, experiment = sys.argv[1:4]
if what == "search":
    from mlflow import MlflowClient
    client = MlflowClient(uri)
    experiment_id = client.get_experiment_by_name(experiment).experiment_id
    start = time.perf_counter()
    count, token = 0, None
    while True:
        page = client.search_runs([experiment_id], max_results=1000, page_token=token)
        count += len(page)
        token = page.token
        if not token:
            break
    extra = {"runs": count}
else:
    if what == "explain-mlflow" or not uri.startswith("http"):
        # read through MlflowClient (a local store has no other reader): its import and its
        # store module's are excluded, as the search's are
        import mlflow  # noqa: F401
        import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
    import mlflow_fingerprint as mfp
    from mlflow_fingerprint.explain.experiment import explain
    start = time.perf_counter()
    report = explain(experiment, tracking_uri=uri)
    extra = {"report": report.to_dict(), "mlflow": "mlflow" in sys.modules}
seconds = time.perf_counter() - start
# VmHWM, not ru_maxrss: after fork and exec, ru_maxrss still counts the forked parent's pages.
status = open("/proc/self/status").read().split("VmHWM:")[1].split()
peak = int(status[0]) / 1024
print(json.dumps({"seconds": seconds, "peak_mib": peak, **extra}))
"""

STALL = """
import json, sys, time
import requests
from mlflow_fingerprint.tracking import rest
url = sys.argv[1]
reader, plain = rest.Reader(url), requests.Session()
def median_ms(get, n=100):
    get()
    times = []
    for _ in range(n):
        start = time.perf_counter(); get(); times.append((time.perf_counter() - start) * 1000)
    return sorted(times)[n // 2]
print(json.dumps({
    "reader_ms": median_ms(lambda: reader._request("GET", "/health")),
    "plain_session_ms": median_ms(lambda: plain.get(url + "/health").raise_for_status()),
}))
"""


def child(what: str, uri: str, spool: Path | None = None) -> dict[str, Any]:
    """One measurement; ``spool``: the spool folder, beside which the record cache lives (a new
    one: a cold read)."""
    spool = spool or Path(tempfile.mkdtemp(prefix="mfp-bench-spool-")) / "spool"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, what, uri, EXPERIMENT],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "MLFLOW_FINGERPRINT_SPOOL": str(spool)},
    )
    if done.returncode != 0:
        raise SystemExit(f"{what} on {uri} failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def stall(url: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", STALL, url], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def stores(kind: str, folder: Path, runs: int) -> Iterator[tuple[str, str, float | None]]:
    """(the URI explain reads, the server's URL, seconds to write the runs; None if reused)."""
    seeds = max(1, runs // CONFIGURATIONS)
    folder.mkdir(parents=True, exist_ok=True)
    artifacts = folder / "artifacts"
    with contextlib.ExitStack() as stack:
        if kind == "postgres":
            from support.postgres import running_postgres

            pg = stack.enter_context(running_postgres())
            backend = pg.uri()
            fresh = True
        else:
            db = folder / "mlflow.db"
            backend = f"sqlite:///{db}"
            fresh = not db.exists()
        mode = "direct" if kind == "sqlite" else "proxied"
        root = artifacts.as_uri() if kind == "sqlite" else str(artifacts)
        server = stack.enter_context(running_server(backend, root, {}, mode=mode, workers=2))
        written = None
        if fresh:
            start = time.perf_counter()
            write_runs_sql(
                server.url, backend, artifacts, EXPERIMENT, iter_cluster_runs(seeds=seeds)
            )
            written = time.perf_counter() - start
        yield (backend if kind == "sqlite" else server.url), server.url, written


def measure(kind: str, runs: int, repeat: int, folder: Path) -> dict[str, Any]:
    with stores(kind, folder / f"{kind}-{runs}", runs) as (uri, url, written):
        samples: dict[str, list[dict[str, Any]]] = {"search": [], "explain": [], "cached": []}
        mlflow_read = child("explain-mlflow", uri)  # also the warm-up
        for _ in range(repeat):
            samples["search"].append(child("search", uri))
            spool = Path(tempfile.mkdtemp(prefix="mfp-bench-spool-")) / "spool"
            samples["explain"].append(child("explain", uri, spool))
            samples["cached"].append(child("explain", uri, spool))
        found = samples["search"][0]["runs"]
        report = samples["explain"][0]["report"]
        same = all(s["report"] == report for s in samples["explain"] + samples["cached"]) and (
            mlflow_read["report"] == report
        )
        med = {k: statistics.median(s["seconds"] for s in v) for k, v in samples.items()}
        peak = {k: max(s["peak_mib"] for s in v) for k, v in samples.items()}
        return {
            "store": kind,
            "runs": found,
            "write_s": written,
            "search_s": med["search"],
            "explain_s": med["explain"],
            "explain_cached_s": med["cached"],
            "explain_mlflow_s": mlflow_read["seconds"],
            "ratio": med["explain"] / med["search"],
            "peak_mib": peak,
            "same_report_readers_and_cache": same,
            "top_factor": report["factors"][0]["fields"][0] if report["factors"] else None,
            "stall": stall(url) if kind != "sqlite" else None,
        }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", default="1000", help="sizes, comma-separated: 1000,10000,100000")
    p.add_argument("--stores", default="postgres,server,sqlite")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--limit", type=float, default=1.3, help="explain / search ratio to pass")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--store", metavar="DIR", help="keep the sqlite stores in DIR (and reuse them)")
    args = p.parse_args()
    failed = False
    results = []
    with tempfile.TemporaryDirectory(prefix="mfp-bench-explain-") as tmp:
        folder = Path(args.store) if args.store else Path(tmp)
        print(f"median of {args.repeat}; each in a fresh process, imports excluded")
        print(
            f"{'store':9} {'runs':>7} {'search':>8} {'explain':>8} {'ratio':>6} {'cached':>8} "
            f"{'(mlflow)':>9} {'peak MiB s/e':>13} {'write':>7}  health ms reader/plain"
        )
        for runs in (int(n) for n in args.runs.split(",")):
            for kind in args.stores.split(","):
                r = measure(kind, runs, args.repeat, folder)
                results.append(r)
                health = (
                    f"{r['stall']['reader_ms']:.1f}/{r['stall']['plain_session_ms']:.1f}"
                    if r["stall"]
                    else "-"
                )
                write = f"{r['write_s']:6.0f}s" if r["write_s"] is not None else "   kept"
                print(
                    f"{kind:9} {r['runs']:7,} {r['search_s']:7.2f}s {r['explain_s']:7.2f}s "
                    f"{r['ratio']:5.2f}x {r['explain_cached_s']:7.2f}s "
                    f"{r['explain_mlflow_s']:8.2f}s "
                    f"{r['peak_mib']['search']:6.0f}/{r['peak_mib']['explain']:<6.0f} {write}  "
                    f"{health}",
                    flush=True,
                )
                if r["ratio"] > args.limit:
                    print(f"  FAIL: explain over {args.limit:g}x one paging")
                    failed = True
                if not r["same_report_readers_and_cache"]:
                    print("  FAIL: the REST reader, MlflowClient and the cache gave other reports")
                    failed = True
                if r["top_factor"] not in ("program.call.lr", "params.lr"):
                    print(f"  FAIL: top factor {r['top_factor']} (the model's: program.call.lr)")
                    failed = True
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
