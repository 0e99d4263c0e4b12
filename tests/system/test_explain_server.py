"""``explain`` against a real ``mlflow server`` that proxies artifacts: the records come over
HTTP, one request per distinct record (runs with equal section hashes share one), beside one
search for all the runs (the timings at 1,000 runs and more are in benchmarks/bench_explain.py)."""

from __future__ import annotations

import dataclasses
import json
import threading

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint.explain import replicas
from mlflow_fingerprint.tracking import experiment as reads
from mlflow_fingerprint.tracking import rest
from support.explain_runs import cluster_runs, write_runs

pytestmark = pytest.mark.usefixtures("restore_environ")


def test_explain_reads_a_server_in_batches(mlflow_server: str, monkeypatch) -> None:
    runs = cluster_runs(machines=("a100", "h100"), lrs=(1e-3, 1e-1), batches=(64,), decays=(0.0,))
    # Four reruns of recorded configurations with their seeds: the same record, other results.
    again = [
        dataclasses.replace(r, name=f"{r.name}-again", val_loss=r.val_loss + 0.002)
        for r in runs[:4]
    ]
    write_runs(mlflow_server, "explain-server", [*runs, *again])
    from mlflow import MlflowClient
    from mlflow.store.artifact.http_artifact_repo import HttpArtifactRepository

    from mlflow_fingerprint.run import context_provider  # after mlflow, which loads it

    calls: dict[str, int] = {}

    def spy(owner: type, name: str) -> None:
        real = getattr(owner, name)

        def counted(self, *args, **kwargs):
            # the context provider's attacher searches for runs an earlier test of this worker
            # opened (for a minute): its calls are not explain's
            if threading.current_thread().name != context_provider.ATTACHER_THREAD:
                calls[name] = calls.get(name, 0) + 1
            return real(self, *args, **kwargs)

        monkeypatch.setattr(owner, name, counted)

    for name in ("search_runs", "get_run", "list_artifacts", "download_artifacts"):
        spy(MlflowClient, name)
    spy(HttpArtifactRepository, "_download_file")
    spy(HttpArtifactRepository, "list_artifacts")
    spy(rest.Reader, "artifact_file")
    report = mfp.explain("explain-server", tracking_uri=mlflow_server)
    # one record per recipe (its replicates' derived from it and checked by their hashes),
    # through the REST reader even where MLflow is imported
    recipes = len({r.record["hashes"]["replicate"] for r in runs})
    assert calls == {"search_runs": 1, "artifact_file": recipes}
    assert report.runs == len(runs) + len(again) == 24
    assert not report.missing.runs
    assert report.factors[0].fields[0] in ("params.lr", "program.call.lr")
    (machine,) = [f for f in report.factors if "torch.version" in f.fields]
    assert machine.confounded
    assert "gpu.devices.0.name" in machine.fields

    # Again: every record from the cache beside the spool, none read; the same report.
    calls.clear()
    cached = mfp.explain("explain-server", tracking_uri=mlflow_server)
    assert calls == {"search_runs": 1}
    assert json.dumps(cached.to_dict()) == json.dumps(report.to_dict())

    # The same report, field for field, as where each run's own artifact is read.
    def each_own(used, uri, reader=None, progress=None, cache=None):
        return reads.read_artifacts(used, uri, reader=reader, progress=progress)

    monkeypatch.setattr(reads, "read_records", each_own)
    monkeypatch.setattr(replicas, "group_key", lambda run: None)  # no run derived
    calls.clear()
    cold = mfp.explain("explain-server", tracking_uri=mlflow_server)
    assert calls["artifact_file"] == len(runs) + len(again)
    assert json.dumps(cold.to_dict()) == json.dumps(report.to_dict())
