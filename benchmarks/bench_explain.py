"""``fingerprint explain`` on 1,000 runs, against a plain ``search_runs`` of the same runs.

The store is built from recorded fingerprints (``tests/support/explain_runs.py``: an A100, an
H100 and an L4 through the replays of their NVML readings, and this CPU machine's capture; 200
configurations x 5 seeds) twice:

- ``sqlite``: a local sqlite store whose runs keep their artifacts in a local folder (MLflow's
  default kind of store), read by ``explain`` with ``--tracking-uri sqlite:///...``;
- ``server``: a real ``mlflow server`` (sqlite rows, artifacts proxied by the server:
  ``mlflow-artifacts:``), read over HTTP.

Both are written through a real ``mlflow server``'s REST API. Measured alternately, median of
``--repeat``:

1. ``search``: ``MlflowClient.search_runs`` of the experiment's runs, every page (the floor any
   client pays to see the runs, their params, tags and metrics);
2. ``explain()``: ``mfp.explain(experiment)`` in-process, everything included: the same search,
   the 1,000 fingerprint records, the analysis (bootstrap included);
3. ``fingerprint explain``: the whole command as a user runs it, interpreter start included,
   against ``search (process)``: a Python process that imports mlflow and does the same search
   (what any command reading these runs pays before it reads a record).

Also: where ``explain()``'s time goes (reads vs analysis), the per-run read cost beyond the
search, and whether the report names the learning rate first (it must: the model says so).

    .venv/bin/python benchmarks/bench_explain.py [--runs-seeds 5] [--repeat 3] [--json FILE]
                                                 [--store DIR]  # keep (and reuse) the stores

Exit status 1 if ``explain`` takes more than 10 s on sqlite or 30 s against the server.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

from support.explain_runs import SEEDS, cluster_runs, write_runs  # noqa: E402
from support.mlflow_team import running_server  # noqa: E402

FINGERPRINT = str(Path(sys.executable).with_name("fingerprint"))
EXPERIMENT = "cluster"
LIMITS = {"sqlite": 10.0, "server": 30.0}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def search(uri: str) -> int:
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    count, token = 0, None
    while True:
        page = client.search_runs([experiment_id], max_results=1000, page_token=token)
        count += len(page)
        token = page.token
        if not token:
            return count


def explain_parts(uri: str) -> dict[str, float]:
    """Where one ``explain`` spends its time: the search, reading the records, the table of
    fields (records parsed, flattened, classified), the analysis (bootstrap included)."""
    from mlflow_fingerprint.compare.explain import experiment as ex
    from mlflow_fingerprint.tracking import experiment as reads

    parts: dict[str, float] = {}
    real_search, real_read, real_analyse = reads.search, reads.read_artifacts, ex.analyse
    real_build = ex.build

    def clocked(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            seconds, result = timed(lambda: fn(*args, **kwargs))
            parts[name] = parts.get(name, 0.0) + seconds
            return result

        return wrapper

    reads.search = clocked("search", real_search)
    reads.read_artifacts = clocked("records", real_read)
    ex.analyse = clocked("analysis", real_analyse)
    ex.build = clocked("table", real_build)
    try:
        total, _ = timed(lambda: ex.explain(EXPERIMENT, tracking_uri=uri))
    finally:
        reads.search, reads.read_artifacts, ex.analyse = real_search, real_read, real_analyse
        ex.build = real_build
    parts["total"] = total
    return parts


SEARCH_PROCESS = """
import sys
from mlflow import MlflowClient
client = MlflowClient(sys.argv[1])
experiment_id = client.get_experiment_by_name(sys.argv[2]).experiment_id
token = None
while True:
    page = client.search_runs([experiment_id], max_results=1000, page_token=token)
    token = page.token
    if not token:
        break
"""


def process_seconds(argv: list[str], what: str) -> float:
    """How long a whole process takes, interpreter start included."""
    seconds, out = timed(lambda: subprocess.run(argv, capture_output=True, text=True, check=False))
    if out.returncode != 0:
        raise SystemExit(f"{what} failed: {out.stderr.strip()[-300:]}")
    return seconds


def search_process(uri: str) -> float:
    return process_seconds([sys.executable, "-c", SEARCH_PROCESS, uri, EXPERIMENT], "search")


def cli(uri: str) -> float:
    argv = [FINGERPRINT, "explain", EXPERIMENT, "--tracking-uri", uri, "--format", "json"]
    return process_seconds(argv, "fingerprint explain")


def build(folder: Path, seeds: int, stack: contextlib.ExitStack) -> dict[str, Any]:
    """The sqlite store (written through a server that gives runs a local artifact root) and a
    proxied server, each holding the same runs; the server runs until ``stack`` closes. Stores
    already in ``folder`` are kept as they are."""
    runs = cluster_runs(seeds=seeds)
    stores: dict[str, Any] = {"runs": len(runs), "build_sqlite_s": None, "build_server_s": None}
    local, remote = folder / "local", folder / "remote"
    fresh = not (local / "mlflow.db").exists()
    local.mkdir(parents=True, exist_ok=True)
    remote.mkdir(parents=True, exist_ok=True)
    db = local / "mlflow.db"
    if fresh:
        with running_server(
            f"sqlite:///{db}", (local / "artifacts").as_uri(), {}, mode="direct"
        ) as server:
            stores["build_sqlite_s"], _ = timed(lambda: write_runs(server.url, EXPERIMENT, runs))
    stores["sqlite"] = f"sqlite:///{db}"
    server = stack.enter_context(
        running_server(f"sqlite:///{remote / 'mlflow.db'}", str(remote / "artifacts"), {})
    )
    if fresh:
        stores["build_server_s"], _ = timed(lambda: write_runs(server.url, EXPERIMENT, runs))
    stores["server"] = server.url
    return stores


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs-seeds", type=int, default=SEEDS, help="seeds per configuration")
    # 200 configurations x 5 seeds: the 1,000 runs
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", metavar="FILE")
    p.add_argument(
        "--store",
        metavar="DIR",
        help="build the stores in DIR and keep them; an existing DIR is read again, not rebuilt",
    )
    args = p.parse_args()
    import mlflow_fingerprint as mfp

    with (
        tempfile.TemporaryDirectory(prefix="mfp-bench-explain-") as tmp,
        contextlib.ExitStack() as stack,
    ):
        folder = Path(args.store) if args.store else Path(tmp)
        stores = build(folder, args.runs_seeds, stack)
        results: dict[str, Any] = {"runs": stores["runs"]}
        for kind in ("sqlite", "server"):
            uri = stores[kind]
            assert search(uri) == stores["runs"]
            mfp.explain(EXPERIMENT, tracking_uri=uri)  # warm-up: imports, connections
        samples: dict[str, dict[str, list[float]]] = {
            k: {"search": [], "explain": [], "search_process": [], "cli": []}
            for k in ("sqlite", "server")
        }
        parts: dict[str, list[dict[str, float]]] = {"sqlite": [], "server": []}
        for _ in range(args.repeat):
            for kind in ("sqlite", "server"):
                uri = stores[kind]
                samples[kind]["search"].append(timed(lambda u=uri: search(u))[0])
                found = explain_parts(uri)
                parts[kind].append(found)
                samples[kind]["explain"].append(found["total"])
                samples[kind]["search_process"].append(search_process(uri))
                samples[kind]["cli"].append(cli(uri))
        report = mfp.explain(EXPERIMENT, tracking_uri=stores["sqlite"])
        results["top_factor"] = list(report.factors[0].fields)
        results["build_s"] = {
            "sqlite": stores["build_sqlite_s"],
            "server": stores["build_server_s"],
        }
        failed = False
        print(f"explain of {stores['runs']} runs; median of {args.repeat}")
        print(
            f"{'store':8} {'search':>8} {'explain()':>10} {'ratio':>7} {'ms/run':>7} "
            f"{'search(p)':>10} {'CLI':>8}   explain() parts"
        )
        for kind in ("sqlite", "server"):
            med = {k: statistics.median(v) for k, v in samples[kind].items()}
            split = {
                k: statistics.median(p.get(k, 0.0) for p in parts[kind])
                for k in ("search", "records", "table", "analysis")
            }
            per_run_ms = (med["explain"] - med["search"]) / stores["runs"] * 1000
            results[kind] = {
                **{f"{k}_s": v for k, v in med.items()},
                "ratio": med["explain"] / med["search"],
                "per_run_beyond_search_ms": per_run_ms,
                "parts_s": split,
                "limit_s": LIMITS[kind],
            }
            print(
                f"{kind:8} {med['search']:7.2f}s {med['explain']:9.2f}s "
                f"{med['explain'] / med['search']:6.1f}x {per_run_ms:6.2f} "
                f"{med['search_process']:9.2f}s {med['cli']:7.2f}s   "
                + ", ".join(f"{k} {v:.2f}s" for k, v in split.items())
            )
            if max(med["explain"], med["cli"]) > LIMITS[kind]:
                print(f"  FAIL: over the {LIMITS[kind]:g} s limit")
                failed = True
        print(f"top factor: {results['top_factor']} (the model's answer: program.call.lr)")
        if results["top_factor"][0] not in ("program.call.lr", "params.lr"):
            failed = True
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
