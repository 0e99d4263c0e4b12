"""``explain`` against a real ``mlflow server`` that proxies artifacts: the records come over
HTTP, one request per run, beside one search for all the runs (the 1,000-run timing is in
benchmarks/bench_explain.py)."""

from __future__ import annotations

import pytest

import mlflow_fingerprint as mfp
from support.explain_runs import cluster_runs, write_runs

pytestmark = pytest.mark.usefixtures("restore_environ")


def test_explain_reads_a_server_in_batches(mlflow_server: str, monkeypatch) -> None:
    runs = cluster_runs(machines=("a100", "h100"), lrs=(1e-3, 1e-1), batches=(64,), decays=(0.0,))
    write_runs(mlflow_server, "explain-server", runs)
    from mlflow import MlflowClient
    from mlflow.store.artifact.http_artifact_repo import HttpArtifactRepository

    calls: dict[str, int] = {}

    def spy(owner: type, name: str) -> None:
        real = getattr(owner, name)

        def counted(self, *args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return real(self, *args, **kwargs)

        monkeypatch.setattr(owner, name, counted)

    for name in ("search_runs", "get_run", "list_artifacts", "download_artifacts"):
        spy(MlflowClient, name)
    spy(HttpArtifactRepository, "_download_file")
    spy(HttpArtifactRepository, "list_artifacts")
    report = mfp.explain("explain-server", tracking_uri=mlflow_server)
    assert calls == {"search_runs": 1, "_download_file": len(runs)}
    assert report.runs == len(runs) == 20
    assert not report.missing.runs
    assert report.factors[0].fields[0] in ("params.lr", "program.call.lr")
    (machine,) = [f for f in report.factors if "torch.version" in f.fields]
    assert machine.confounded
    assert "gpu.devices.0.name" in machine.fields
