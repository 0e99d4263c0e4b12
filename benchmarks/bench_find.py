"""``fingerprint find`` at scale: 1,000 against 10,000 fingerprinted runs in one experiment on a
team server (``mlflow server`` on PostgreSQL, artifacts in S3 via moto), all started here.

Two team servers run side by side on one PostgreSQL cluster, one database each: "small" holds
1,000 runs, "large" 10,000. Runs are created through MLflow's REST API (create with the
``fingerprint.*`` tags, log-batch, update to FINISHED) from a thread pool. Five runs in each
share one fingerprint and every other run has hashes of its own, so ``find`` answers with the
same four runs on both and only the number of non-matching runs differs. The two are measured
alternately, so whatever else the machine does slows both alike. Medians of ``--repeats``:

- ``find()``: the command's work in one process (resolve the run, search by tag);
- ``fingerprint find``: the whole command as a user runs it, interpreter start included;
- ``search``: the tag search alone (one ``search_runs`` call);
- ``SQL``: PostgreSQL's execution time for MLflow's query (EXPLAIN ANALYZE, best of five).

    python benchmarks/bench_find.py [--small 1000] [--large 10000] [--repeats 9] [--index]

``--index`` measures again with the partial index docs/team-server.md recommends. Exit status 1
if ``fingerprint find`` or ``find()`` takes more than twice as long on the large store.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

from support import bulk
from support.mlflow_team import running_server
from support.postgres import Postgres, running_postgres
from support.s3 import S3Store, running_s3

TWINS = 5
LIMIT = 2.0
# A partial index: only the short hash tags, so a long tag value elsewhere can never exceed a
# btree entry's size limit; IN (not LIKE) so the planner can prove `key = '...'` implies it.
INDEX_SQL = (
    "CREATE INDEX IF NOT EXISTS tags_fingerprint_hash ON tags (key, value) WHERE key IN "
    "('fingerprint.hash', 'fingerprint.hash.env', 'fingerprint.hash.numerics', "
    "'fingerprint.hash.recipe')"
)
# MLflow's query for tags.`fingerprint.hash` = '...' (as the server logs it), select list cut.
SEARCH_SQL = """
SELECT DISTINCT runs.run_uuid, runs.start_time FROM runs
JOIN (SELECT tags.run_uuid AS run_uuid FROM tags
      WHERE tags.key = 'fingerprint.hash' AND tags.value = %s) AS anon_1
  ON runs.run_uuid = anon_1.run_uuid
WHERE runs.experiment_id IN (SELECT experiment_id FROM experiments)
  AND runs.lifecycle_stage IN ('active')
ORDER BY runs.start_time DESC, runs.run_uuid LIMIT 102
"""


@dataclass
class Store:
    """One team server and what was created in it."""

    label: str
    runs: int
    pg: Postgres
    database: str
    uri: str = ""
    reference: str = ""
    hash: str = ""
    times: dict[str, list[float]] = field(default_factory=dict)
    sql_ms: float = 0.0
    plan: list[str] = field(default_factory=list)

    def sql(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        import psycopg2

        conn = psycopg2.connect(
            host="127.0.0.1",
            port=self.pg.port,
            user="mfp",
            password=self.pg.password,
            dbname=self.database,
        )
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute(query, args or None)
                return list(cur.fetchall()) if cur.description else []
        finally:
            conn.close()

    def explain(self) -> None:
        self.sql_ms = float("inf")
        for _ in range(5):
            lines = [
                r[0] for r in self.sql("EXPLAIN (ANALYZE, COSTS OFF) " + SEARCH_SQL, self.hash)
            ]
            ms = float(next(ln for ln in lines if "Execution Time" in ln).split(":")[1].split()[0])
            if ms < self.sql_ms:
                self.sql_ms, self.plan = ms, lines

    def median(self, name: str) -> float:
        return statistics.median(self.times[name])


@contextlib.contextmanager
def team_server(label: str, runs: int, pg: Postgres, s3: S3Store, workers: int) -> Iterator[Store]:
    database = f"bench_{label}"
    backend = pg.create_database(database)
    with running_server(backend, f"s3://{s3.bucket}/{label}/", s3.env, workers=workers) as srv:
        yield Store(label, runs, pg, database, uri=srv.url)


def populate(store: Store, threads: int) -> float:
    """Five twins (one with its fingerprint artifact) and ``runs - 5`` non-matching runs;
    returns the seconds the non-matching runs took."""
    rest = bulk.Rest(store.uri)
    experiment_id = rest.experiment("bench-find")
    target = {k: bulk.fake_hash("bench-target", k) for k in bulk.HASH_KEYS}
    twins = bulk.create_runs(store.uri, experiment_id, bulk.twin_specs(TWINS, target))
    bulk.attach_fingerprint(store.uri, twins[0], bulk.record_with_hashes(target))
    store.reference, store.hash = twins[0], target["fingerprint"]
    start = time.perf_counter()
    bulk.create_runs(
        store.uri, experiment_id, bulk.filler_specs(store.runs - TWINS), threads=threads
    )
    elapsed = time.perf_counter() - start
    count = store.runs - TWINS
    print(
        f"  {store.label}: created {count} runs in {elapsed:.1f}s ({count / elapsed:.0f} "
        "runs/s, 3 requests each)",
        flush=True,
    )
    return elapsed


def probes(store: Store) -> dict[str, Callable[[], None]]:
    from mlflow import MlflowClient

    from mlflow_fingerprint.compare.find import find

    client = MlflowClient(store.uri)
    experiment_ids = [e.experiment_id for e in client.search_experiments()]

    def api() -> None:
        assert len(find(store.reference, tracking_uri=store.uri).matches) == TWINS - 1

    def search() -> None:
        client.search_runs(
            experiment_ids, f"tags.`fingerprint.hash` = '{store.hash}'", max_results=101
        )

    def command() -> None:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "mlflow_fingerprint.cli",
                "find",
                store.reference,
                "--tracking-uri",
                store.uri,
            ],
            check=True,
            capture_output=True,
        )

    return {"find()": api, "search": search, "fingerprint find": command}


def measure(stores: list[Store], repeats: int) -> None:
    """Every probe on every store, alternating stores within each repetition."""
    table = {s.label: probes(s) for s in stores}
    for s in stores:
        s.times = {name: [] for name in table[s.label]}
        for fn in table[s.label].values():
            fn()  # warm: imports, connection pools
    for _ in range(repeats):
        for name in table[stores[0].label]:
            for s in stores:
                start = time.perf_counter()
                table[s.label][name]()
                s.times[name].append(time.perf_counter() - start)
    for s in stores:
        s.explain()


def report(stores: list[Store], title: str) -> dict[str, float]:
    small, large = stores
    print(f"\n{title}")
    print(f"  {'':18} {small.runs:>10} runs {large.runs:>10} runs   ratio")
    ratios = {}
    for name in small.times:
        a, b = small.median(name) * 1000, large.median(name) * 1000
        ratios[name] = b / a
        print(f"  {name:18} {a:12.1f} ms {b:12.1f} ms   {b / a:5.2f}x")
    print(
        f"  {'SQL (EXPLAIN)':18} {small.sql_ms:12.2f} ms {large.sql_ms:12.2f} ms   "
        f"{large.sql_ms / small.sql_ms:5.2f}x",
        flush=True,
    )
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=16, help="client threads for creation")
    parser.add_argument("--workers", type=int, default=2, help="workers per mlflow server")
    parser.add_argument("--index", action="store_true", help="also measure with the index")
    parser.add_argument("--plan", action="store_true", help="print the query plans")
    args = parser.parse_args()

    with (
        running_postgres() as pg,
        running_s3() as s3,
        team_server("small", args.small, pg, s3, args.workers) as small,
        team_server("large", args.large, pg, s3, args.workers) as large,
    ):
        stores = [small, large]
        print(
            f"PostgreSQL on port {pg.port}, S3 (moto) at {s3.endpoint}; team servers "
            f"{small.uri} ({args.small} runs) and {large.uri} ({args.large} runs)",
            flush=True,
        )
        created = sum(populate(s, args.threads) for s in stores)
        total = args.small + args.large - 2 * TWINS
        measure(stores, args.repeats)
        ratios = report(stores, f"without an index (median of {args.repeats}):")
        plan_text = [(f"{s.label}, no index", list(s.plan)) for s in stores if args.plan]
        if args.index:
            for s in stores:
                s.sql(INDEX_SQL)
                s.sql("ANALYZE tags")
            measure(stores, args.repeats)
            report(stores, "with the partial index on the fingerprint.hash* tags:")
            plan_text += [(f"{s.label}, index", list(s.plan)) for s in stores if args.plan]
        for label, plan in plan_text:
            print(f"\nplan ({label}):\n  " + "\n  ".join(plan))

    print(f"\nbulk creation: {total} runs in {created:.0f}s ({total / created:.0f} runs/s)")
    worst = max(ratios["find()"], ratios["fingerprint find"])
    verdict = "PASS" if worst <= LIMIT else "FAIL"
    print(
        f"{verdict}: fingerprint find {ratios['fingerprint find']:.2f}x, find() "
        f"{ratios['find()']:.2f}x on {args.large} vs {args.small} runs (limit {LIMIT:.2f}x)"
    )
    return 0 if worst <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
