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
what grows with the runs: MLflow's too where ``explain`` reads through ``MlflowClient``, as the
search's are), alternately, median of ``--repeat``:

1. ``search``: ``MlflowClient.search_runs`` of the experiment's runs, every page, one after
   another: the floor any client pays to see the runs, their params, tags and metrics (timed
   from ``MlflowClient(uri)``, the store's opening, as ``explain`` opens its store in its time);
2. ``explain``: ``mfp.explain(experiment)`` as the CLI runs it, MLflow not imported (a server
   read through the REST reader, a local sqlite store from its tables): the search, the records,
   the analysis (bootstrap included) and the JSON report written as the command writes it;
3. ``cached``: ``explain`` again with the records read by the one before it in the cache
   beside the spool (each cold ``explain`` gets a new spool folder);
4. ``explain (mlflow)``: the same with MLflow imported first, read through ``MlflowClient``
   (the report must be the same, from each reader and from the cache; the time is beside);
5. ``find``: ``fingerprint find RUN`` as the command runs it (the tag search and the table it
   prints), ``--same all`` (no other run shares a run's seeds) and ``--same env`` (a quarter of
   the runs share one environment: the most matches a search by tag has to order);
6. the peak memory (max RSS) of each process.

``--measures`` picks among ``search,explain,cached,mlflow,find`` (``mlflow`` is also the
warm-up): ``--measures search,explain,find --repeat 1`` keeps 100,000 runs affordable.

Also, on the server: ``GET /health`` on a reused connection through the REST reader (which
acknowledges each answer at once) against a plain ``requests`` session, which waits out the
delayed ACK of an answer the server writes in two pieces.

    .venv/bin/python benchmarks/bench_explain.py [--runs 1000,10000,100000] [--repeat 3]
                        [--stores postgres,server,sqlite] [--measures ...] [--json FILE]
                        [--store DIR]

Exit status 1 if ``explain`` takes more than ``--limit`` (default 1.3) times one paging, ``find``
more than ``--find-limit`` (default 2) seconds, or the report does not name the learning rate
first (the model says it matters most).
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
from collections.abc import Iterator, Sequence
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
    import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
    # timed from the client's opening of the store, as explain's reads are (a sqlite store's
    # opening checks its schema: over a second here, whatever the runs)
    start = time.perf_counter()
    client = MlflowClient(uri)
    experiment_id = client.get_experiment_by_name(experiment).experiment_id
    count, token = 0, None
    while True:
        page = client.search_runs([experiment_id], max_results=1000, page_token=token)
        count += len(page)
        token = page.token
        if not token:
            break
    extra = {"runs": count}
elif what == "find":
    # `fingerprint find RUN` as the command runs it (MLflow imported only where a local store
    # needs MlflowClient, excluded from the time like the search's): the run comes first from
    # one search of a single run, outside the time
    if not uri.startswith("http"):
        import mlflow  # noqa: F401
        import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
    from mlflow_fingerprint.cli.cmd_find import text
    from mlflow_fingerprint.compare.find import find
    from mlflow_fingerprint.compare.resolve import find_experiment_id
    from mlflow_fingerprint.tracking import store
    reader = store.reader(uri)
    [run] = reader.search_runs([find_experiment_id(reader, experiment, uri)], max_results=1)
    same = sys.argv[4]
    start = time.perf_counter()
    result = find(run.info.run_id, same=same, tracking_uri=uri)
    shown = text(result)
    extra = {"matches": len(result.matches), "same": same}
else:
    if what == "explain-mlflow":
        # read through MlflowClient (a local store's tables are then read as it reads them):
        # its import and its store module's are excluded, as the search's are
        import mlflow  # noqa: F401
        import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
    import mlflow_fingerprint as mfp
    from mlflow_fingerprint.explain.experiment import explain
    # the REST reader's own imports (requests: what MlflowClient's import brings the search)
    import mlflow_fingerprint.tracking.rest  # noqa: F401
    import requests, urllib3.util.retry  # noqa: E401, F401
    import hashlib
    from mlflow_fingerprint.present.explain import pieces
    start = time.perf_counter()
    report = explain(experiment, tracking_uri=uri)
    # written as `fingerprint explain --format json` writes it, a part at a time, into a digest:
    # the peak is the command's (a whole to_dict() is 13 MiB more at 100,000 runs), and equal
    # digests are equal reports
    digest = hashlib.sha256()
    for piece in pieces(report, "json"):
        digest.update(piece.encode())
    top = report.factors[0].fields[0] if report.factors else None
    extra = {"report": digest.hexdigest(), "top": top, "mlflow": "mlflow" in sys.modules}
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


def child(what: str, uri: str, spool: Path | None = None, *args: str) -> dict[str, Any]:
    """One measurement; ``spool``: the spool folder, beside which the record cache lives (a new
    one: a cold read); ``args``: the child's own (find's --same)."""
    spool = spool or Path(tempfile.mkdtemp(prefix="mfp-bench-spool-")) / "spool"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, what, uri, EXPERIMENT, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "MLFLOW_FINGERPRINT_SPOOL": str(spool)},
    )
    if done.returncode != 0:
        raise SystemExit(f"{what} on {uri} failed: {done.stderr.strip()[-500:]}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    # each figure as it comes, on stderr: a long run's log holds those it got to
    shown = " ".join([what, *args])
    print(f"  {shown}: {found['seconds']:.2f} s, {found['peak_mib']:.0f} MiB", file=sys.stderr)
    return found


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
            print(f"  {runs:,} runs written: {written:.0f} s", file=sys.stderr, flush=True)
        yield (backend if kind == "sqlite" else server.url), server.url, written


MEASURES = ("search", "explain", "cached", "mlflow", "find")
# find's --same: the whole fingerprint (a run's own: no other run shares its seeds) and the
# environment (a quarter of the runs share one: the most a search by tag has to sort)
FIND_SAME = ("all", "env")


def measure(
    kind: str, runs: int, repeat: int, folder: Path, measures: Sequence[str]
) -> dict[str, Any]:
    """The figures of one store at one size: each of ``measures`` ``repeat`` times, alternately
    (``explain`` before the paging, so a cache the first read warms favours the paging)."""
    with stores(kind, folder / f"{kind}-{runs}", runs) as (uri, url, written):
        samples: dict[str, list[dict[str, Any]]] = {m: [] for m in MEASURES if m != "mlflow"}
        samples |= {f"find-{same}": [] for same in FIND_SAME}
        mlflow_read = child("explain-mlflow", uri) if "mlflow" in measures else None
        for _ in range(repeat):
            if "explain" in measures:
                spool = Path(tempfile.mkdtemp(prefix="mfp-bench-spool-")) / "spool"
                samples["explain"].append(child("explain", uri, spool))
                if "cached" in measures:
                    samples["cached"].append(child("explain", uri, spool))
            if "search" in measures:
                samples["search"].append(child("search", uri))
            if "find" in measures:
                for same in FIND_SAME:
                    samples[f"find-{same}"].append(child("find", uri, None, same))
        read = samples["explain"] + samples["cached"] + ([mlflow_read] if mlflow_read else [])
        reports = [s["report"] for s in read]
        med = {k: statistics.median(s["seconds"] for s in v) for k, v in samples.items() if v}
        peak = {k: max(s["peak_mib"] for s in v) for k, v in samples.items() if v}
        if mlflow_read:
            med["mlflow"], peak["mlflow"] = mlflow_read["seconds"], mlflow_read["peak_mib"]
        report = reports[0] if reports else None
        return {
            "store": kind,
            "runs": samples["search"][0]["runs"] if samples["search"] else runs,
            "write_s": written,
            "seconds": med,
            "ratio": med["explain"] / med["search"]
            if {"explain", "search"} <= med.keys()
            else None,
            "peak_mib": peak,
            "find_matches": {s: samples[f"find-{s}"][0]["matches"] for s in FIND_SAME}
            if "find" in measures
            else None,
            "same_report_readers_and_cache": all(r == report for r in reports),
            "top_factor": read[0]["top"] if read else None,
            "stall": stall(url) if kind != "sqlite" else None,
        }


def _s(r: dict[str, Any], what: str) -> str:
    """A median in seconds, or a dash where it was not measured."""
    return f"{r['seconds'][what]:.2f}s" if what in r["seconds"] else "-"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", default="1000", help="sizes, comma-separated: 1000,10000,100000")
    p.add_argument("--stores", default="postgres,server,sqlite")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument(
        "--measures",
        default=",".join(MEASURES),
        help=f"which figures, comma-separated, of {','.join(MEASURES)} (e.g. search,explain,find "
        "keeps 100,000 runs affordable)",
    )
    p.add_argument("--limit", type=float, default=1.3, help="explain / search ratio to pass")
    p.add_argument("--find-limit", type=float, default=2.0, help="seconds find may take")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--store", metavar="DIR", help="keep the sqlite stores in DIR (and reuse them)")
    args = p.parse_args()
    measures = args.measures.split(",")
    unknown = set(measures) - set(MEASURES)
    if unknown:
        p.error(f"unknown --measures {','.join(sorted(unknown))}: of {','.join(MEASURES)}")
    failed = False
    results = []
    with tempfile.TemporaryDirectory(prefix="mfp-bench-explain-") as tmp:
        folder = Path(args.store) if args.store else Path(tmp)
        print(f"median of {args.repeat}; each in a fresh process, imports excluded")
        print(
            f"{'store':9} {'runs':>7} {'search':>8} {'explain':>8} {'ratio':>6} {'cached':>8} "
            f"{'(mlflow)':>9} {'find all/env':>13} {'peak MiB s/e/f':>15} {'write':>7}  "
            "health ms reader/plain"
        )
        for runs in (int(n) for n in args.runs.split(",")):
            for kind in args.stores.split(","):
                r = measure(kind, runs, args.repeat, folder, measures)
                results.append(r)
                health = (
                    f"{r['stall']['reader_ms']:.1f}/{r['stall']['plain_session_ms']:.1f}"
                    if r["stall"]
                    else "-"
                )
                write = f"{r['write_s']:6.0f}s" if r["write_s"] is not None else "   kept"
                ratio = f"{r['ratio']:5.2f}x" if r["ratio"] is not None else "-"
                peaks = "/".join(
                    f"{r['peak_mib'][k]:.0f}" if k in r["peak_mib"] else "-"
                    for k in ("search", "explain", "find-env")
                )
                print(
                    f"{kind:9} {r['runs']:7,} {_s(r, 'search'):>8} {_s(r, 'explain'):>8} "
                    f"{ratio:>6} {_s(r, 'cached'):>8} {_s(r, 'mlflow'):>9} "
                    f"{_s(r, 'find-all') + '/' + _s(r, 'find-env'):>13} {peaks:>15} {write}  "
                    f"{health}",
                    flush=True,
                )
                if r["ratio"] is not None and r["ratio"] > args.limit:
                    print(f"  FAIL: explain over {args.limit:g}x one paging")
                    failed = True
                slow = [
                    k for k in ("find-all", "find-env") if r["seconds"].get(k, 0) > args.find_limit
                ]
                if slow:
                    print(f"  FAIL: {', '.join(slow)} over {args.find_limit:g} s")
                    failed = True
                if not r["same_report_readers_and_cache"]:
                    print("  FAIL: the REST reader, MlflowClient and the cache gave other reports")
                    failed = True
                if r["top_factor"] not in ("program.call.lr", "params.lr", None):
                    print(f"  FAIL: top factor {r['top_factor']} (the model's: program.call.lr)")
                    failed = True
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
