"""A small MLflow sqlite store of real runs, for the tests of what reads MLflow's tables without
MLflow (``tracking/sqlite_runs.py``, ``tracking/sqlite_reader.py``): each is checked against
MLflow's own client on the same file, so both read one store that holds the cases they must
agree on."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

from mlflow_fingerprint import layout

from .records import new_store

T0 = 1_700_000_000_000


def write(store: str, *statements: tuple[str, tuple[Any, ...]]) -> None:
    """Change the store's file behind MLflow's back, as another program would."""
    con = sqlite3.connect(store.removeprefix("sqlite:///"))
    with con:
        for sql, args in statements:
            con.execute(sql, args)
    con.close()


def runs_store(folder: Path, template: Path) -> str:
    """Experiment ``e`` (artifacts under ``folder``): runs r0-r3, two started in one millisecond
    (ordered by id, as MLflow does), with a curve (``loss``: r0 ends at 1/3, r1 at 1/4...), a
    summary (``val_loss``), a NaN (r1's ``odd``), params, tags (a hash, a value holding a quote)
    and a file under the steps artifact, r2 FAILED; ``bare``, logging nothing, its name only in
    its mlflow.runName tag; a deleted run; and ``elsewhere`` in experiment ``other``."""
    uri = new_store(folder, template)
    client = MlflowClient(uri)
    exp = client.create_experiment("e", artifact_location=(folder / "artifacts").as_uri())
    other = client.create_experiment("other")
    for i in range(4):
        run = client.create_run(exp, start_time=T0 + (i // 2) * 1000, run_name=f"r{i}")
        run_id = run.info.run_id
        metrics = [Metric("loss", 1.0 / (s + 1 + i), T0 + s, s) for s in range(3)]
        metrics.append(Metric("val_loss", 0.5 + i, T0, 0))
        metrics += [Metric("odd", float("nan"), T0, 4)] * (i == 1)
        client.log_batch(
            run_id,
            metrics=metrics,
            params=[Param("lr", str(0.1 * i)), Param("b", "x")],
            tags=[
                RunTag(layout.TAG_HASH, f"h{i % 2}"),
                RunTag(layout.TAG_HASH_RECIPE, f"h{i % 2}"),
                RunTag("z", "1"),
                RunTag("a", "2"),
                RunTag("q", "it's"),
            ],
        )
        client.log_text(run_id, f"text {i}", layout.STEPS_ARTIFACT)
        client.set_terminated(run_id, "FINISHED" if i != 2 else "FAILED")
    bare = client.create_run(exp, start_time=T0 + 9000, run_name="bare")  # nothing logged
    client.delete_run(client.create_run(exp, run_name="deleted").info.run_id)
    client.create_run(other, run_name="elsewhere")
    # a run whose name column is empty: its name from the mlflow.runName tag
    write(uri, ("UPDATE runs SET name = '' WHERE run_uuid = ?", (bare.info.run_id,)))
    return uri
