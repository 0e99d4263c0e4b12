"""The team-server path for real: ``mlflow server`` on PostgreSQL with artifacts in S3 (moto).

What a team deploys, started from what is installed: the decorator, ``fingerprint sync``,
``diff`` and ``find`` against it, the rows checked in PostgreSQL itself and the artifact in the
bucket itself, not only through MLflow's answers.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.compare.find import find
from mlflow_fingerprint.model.fingerprint import Fingerprint
from support import bulk
from support.mlflow_team import MlflowServer
from support.postgres import Postgres
from support.s3 import S3Store
from support.stored import cli, exactly_once_problems


def pg_query(pg: Postgres, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    import psycopg2

    conn = psycopg2.connect(
        host="127.0.0.1", port=pg.port, user="mfp", password=pg.password, dbname="mlflow"
    )
    try:
        with conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())
    finally:
        conn.close()


def train_digits(
    digits: ModuleType,
    experiment: str,
    name: str,
    *,
    seed: int = 0,
    batch_size: int = 32,
    steps: int = 40,
) -> tuple[dict[str, float], list]:
    """A short real training under ``fingerprinted``; returns its result and the logged losses."""
    logged: list[tuple[int, float]] = []
    loaders = digits.make_loaders(batch_size=batch_size, num_workers=0, seed=seed)

    @mfp.fingerprinted(experiment=experiment, run_name=name, seed=seed)
    def train(loader: Any, val_loader: Any) -> dict[str, float]:
        original = mfp.log_metrics

        def spy(values: dict[str, float], step: int | None = None) -> None:
            logged.extend((step, float(v)) for k, v in values.items() if k == "loss")
            original(values, step=step)

        digits.mfp.log_metrics = spy  # the example calls mfp.log_metrics through its module
        try:
            return digits.train(loader, epochs=1, val_loader=val_loader, max_steps=steps)
        finally:
            digits.mfp.log_metrics = original

    return train(*loaders), logged


def run_named(client: MlflowClient, experiment: str, name: str) -> Any:
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no experiment {experiment}"
    runs = client.search_runs([exp.experiment_id], f"attributes.run_name = '{name}'")
    assert len(runs) == 1, [r.info.run_id for r in runs]
    return runs[0]


def test_decorated_run_lands_in_postgres_and_its_artifacts_in_s3(
    team_uri: str,
    team_postgres: Postgres,
    team_s3: S3Store,
    digits: ModuleType,
    experiment_name: str,
) -> None:
    result, logged = train_digits(digits, experiment_name, "pg-s3")
    client = MlflowClient(team_uri)
    run = run_named(client, experiment_name, "pg-s3")
    run_id = run.info.run_id

    assert run.info.status == "FINISHED"
    assert run.data.metrics["val_error"] == pytest.approx(result["val_error"])
    assert exactly_once_problems(client, run_id, {"loss": logged}) == []
    assert len(logged) == 40
    for key in (
        layout.TAG_HASH,
        layout.TAG_HASH_ENV,
        layout.TAG_HASH_NUMERICS,
        layout.TAG_HASH_RECIPE,
        layout.TAG_SCHEMA,
        layout.TAG_SEED,
    ):
        assert run.data.tags.get(key), key

    # The rows are in PostgreSQL itself.
    rows = pg_query(
        team_postgres,
        "SELECT value FROM tags WHERE run_uuid = %s AND key = %s",
        run_id,
        layout.TAG_HASH,
    )
    assert rows == [(run.data.tags[layout.TAG_HASH],)]
    [(count,)] = pg_query(
        team_postgres, "SELECT count(*) FROM metrics WHERE run_uuid = %s AND key = 'loss'", run_id
    )
    assert count == 40

    # The artifact is in the bucket itself, byte for byte what MLflow serves.
    keys = team_s3.list_keys(f"{run.info.experiment_id}/{run_id}/")
    fp_key = f"{run.info.experiment_id}/{run_id}/artifacts/fingerprint/fingerprint.json"
    assert fp_key in keys, keys
    served = Path(client.download_artifacts(run_id, layout.FINGERPRINT_ARTIFACT))
    assert team_s3.read(fp_key) == served.read_bytes()
    fp = Fingerprint.from_json(served.read_bytes())
    assert fp.hashes["fingerprint"] == run.data.tags[layout.TAG_HASH]


def test_sync_uploads_a_run_spooled_while_the_team_server_was_down(
    team_uri: str,
    team_server: MlflowServer,
    team_s3: S3Store,
    spool_dir: Path,
    experiment_name: str,
) -> None:
    team_server.kill()
    logged = [(step, 1.0 / (step + 1)) for step in range(25)]

    @mfp.fingerprinted(experiment=experiment_name, run_name="offline", seed=3)
    def train() -> dict[str, float]:
        for step, value in logged:
            mfp.log_metrics({"loss": value}, step=step)
        return {"val_error": 0.5}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert train() == {"val_error": 0.5}
    assert any(spool_dir.iterdir())

    team_server.start()
    out = cli("sync", "--tracking-uri", team_uri)
    assert out.returncode == 0, out.stderr
    client = MlflowClient(team_uri)
    run = run_named(client, experiment_name, "offline")
    assert exactly_once_problems(client, run.info.run_id, {"loss": logged}) == []
    assert run.data.tags[layout.TAG_SEED] == "3"
    prefix = f"{run.info.experiment_id}/{run.info.run_id}/artifacts/{layout.ARTIFACT_DIR}/"
    assert f"{prefix}{layout.FINGERPRINT_FILE}" in team_s3.list_keys(prefix)
    assert not any(spool_dir.iterdir())


def test_diff_and_find_on_the_team_server(
    team_uri: str,
    digits: ModuleType,
    experiment_name: str,
    tmp_path: Path,
) -> None:
    train_digits(digits, experiment_name, "a", seed=0, steps=20)
    train_digits(digits, experiment_name, "a-again", seed=0, steps=20)
    train_digits(digits, experiment_name, "b", seed=1, batch_size=16, steps=20)
    client = MlflowClient(team_uri)
    a, again, b = (run_named(client, experiment_name, n).info.run_id for n in ("a", "a-again", "b"))

    same = cli("diff", a, again, "--tracking-uri", team_uri, "--format", "json")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["verdict"] == "same_results"

    differ = cli("diff", a, b, "--tracking-uri", team_uri, "--format", "json")
    assert differ.returncode == 1, differ.stderr
    report = json.loads(differ.stdout)
    fields = {d["field"] for d in report["differences"]}
    assert "seeds.requested" in fields
    assert any("batch_size" in f for f in fields)
    assert mfp.diff(a, b, tracking_uri=team_uri).exit_code == 1

    found = cli("find", a, "--tracking-uri", team_uri, "-e", experiment_name, "--format", "json")
    assert found.returncode == 0, found.stderr
    ids = {m["run_id"] for m in json.loads(found.stdout)["matches"]}
    assert ids == {again}
    # Across experiments the same fingerprint is found too (earlier tests' seed-0 runs).
    assert again in {m.run_id for m in find(a, tracking_uri=team_uri).matches}
    env_twins = {
        m.run_id
        for m in find(a, same="env", tracking_uri=team_uri, experiment=experiment_name).matches
    }
    assert env_twins == {again, b}


def _find_reads(uri: str, run_id: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """``find``'s matches of ``run_id``, and the rows the store sent it: a spy on the search
    ``find`` makes (``tracking.store.search_all_runs``, whichever reader it is given)."""
    from mlflow_fingerprint.tracking import store

    rows: list[int] = []
    real = store.search_all_runs

    def counted(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        rows.append(len(found))
        return found

    with monkeypatch.context() as patch:
        patch.setattr(store, "search_all_runs", counted)
        matches = len(find(run_id, tracking_uri=uri).matches)
    return matches, sum(rows)


def test_find_reads_no_more_with_ten_times_the_non_matching_runs(
    team_uri: str, team_postgres: Postgres, experiment_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI's scale check: among N, then 10×N, runs that do not match, ``find`` gets the same
    matches from the same rows: the store filters by the hash tag, and nothing grows with the
    runs on the reading side. Its time at 1,000 to 100,000 runs is ``benchmarks/bench_find.py``'s
    (a timed test on a shared CI machine measured the machine's load)."""
    n = 100
    uri = team_uri
    rest = bulk.Rest(uri)
    experiment_id = rest.experiment(experiment_name)
    target = {k: bulk.fake_hash(experiment_name, k) for k in bulk.HASH_KEYS}
    twins = bulk.create_runs(uri, experiment_id, bulk.twin_specs(5, target))
    bulk.attach_fingerprint(uri, twins[0], bulk.record_with_hashes(target))
    # The filler only needs to be there: written into the server's tables as the REST calls
    # would leave it (support/bulk.py), started after the twins.
    database = team_postgres.uri()
    bulk.insert_runs(uri, database, experiment_id, bulk.filler_specs(n, offset=0))
    at_n = _find_reads(uri, twins[0], monkeypatch)
    bulk.insert_runs(uri, database, experiment_id, bulk.filler_specs(9 * n, offset=n))
    at_10n = _find_reads(uri, twins[0], monkeypatch)
    client = MlflowClient(uri)
    for spec in (bulk.filler_specs(1)[0], bulk.filler_specs(1, offset=10 * n - 1)[0]):
        wanted = f"tags.`{layout.TAG_HASH}` = '{spec.hashes['fingerprint']}'"
        assert len(client.search_runs([experiment_id], wanted)) == 1  # the server reads them
    assert at_n == at_10n == (4, 5)  # four twins, read with the run itself


def test_direct_s3_upload_when_the_server_does_not_proxy_artifacts(
    team_postgres: Postgres,
    team_s3: S3Store,
    experiment_name: str,
    spool_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The other team layout: ``--no-serve-artifacts --default-artifact-root s3://…``; the
    training process writes to S3 itself with its own credentials and endpoint."""
    import mlflow

    server = MlflowServer(
        team_postgres.uri(), f"s3://{team_s3.bucket}/direct", team_s3.env, mode="direct"
    )
    try:
        server.start()
        for name, value in team_s3.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("MLFLOW_TRACKING_URI", server.url)
        mlflow.set_tracking_uri(server.url)
        logged = [(step, 1.0 / (step + 1)) for step in range(10)]

        @mfp.fingerprinted(experiment=experiment_name, run_name="direct")
        def train() -> None:
            for step, value in logged:
                mfp.log_metrics({"loss": value}, step=step)

        train()
        client = MlflowClient(server.url)
        run = run_named(client, experiment_name, "direct")
        assert run.info.artifact_uri.startswith(f"s3://{team_s3.bucket}/direct/")
        key = (
            f"direct/{run.info.experiment_id}/{run.info.run_id}/artifacts/"
            f"{layout.FINGERPRINT_ARTIFACT}"
        )
        assert key in team_s3.list_keys("direct/")
        assert exactly_once_problems(client, run.info.run_id, {"loss": logged}) == []
        # The command line reads the run through the REST API, and its fingerprint from S3
        # through MLflow's repository, with the same credentials and endpoint.
        shown = cli("show", run.info.run_id, "--format", "json")
        assert shown.returncode == 0, shown.stderr
        record = json.loads(shown.stdout)
        assert record["hashes"]["fingerprint"] == run.data.tags[layout.TAG_HASH]
    finally:
        mlflow.set_tracking_uri(None)
        server.close()
