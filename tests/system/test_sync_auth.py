"""Authentication never costs data: 401/403 mean "keep and retry later", and ``fingerprint sync``
takes credentials the way MLflow does. Against a real ``mlflow server`` behind an authenticating
gateway (``support.auth_proxy``)."""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.cli.main import main as cli
from mlflow_fingerprint.tracking.events import CreateRun, End
from mlflow_fingerprint.tracking.spool import Spool, list_spools
from mlflow_fingerprint.tracking.uploader import RunWriter, now_ms
from support.auth_proxy import AuthProxy
from support.stored import exactly_once_problems
from support.tracking import active_tracking_uri

USER, PASSWORD = "trainer", "pw-Zq81-not-in-any-file"
TOKEN = "tok-Hh27-not-in-any-file"


@pytest.fixture
def proxy(mlflow_server: str) -> Iterator[AuthProxy]:
    gateway = AuthProxy(mlflow_server, USER, PASSWORD, TOKEN).start()
    yield gateway
    gateway.stop()


def open_run(uri: str, root: Path, name: str) -> RunWriter:
    spool = Spool.create(root)
    writer = RunWriter(spool, uri).start()
    tags = {layout.INTERNAL_SPOOL_ID: spool.spool_id}
    writer.record(CreateRun(spool.spool_id, now_ms(), "auth", None, name, tags, uri))
    return writer


def run_named(server: str, name: str, experiment_name: str = "auth") -> str:
    client = MlflowClient(server)
    experiment = client.get_experiment_by_name(experiment_name)
    [run] = [r for r in client.search_runs([experiment.experiment_id]) if r.info.run_name == name]
    return run.info.run_id


def test_a_window_of_401s_mid_run_loses_nothing(
    mlflow_server: str, proxy: AuthProxy, spool_dir: Path, restore_environ: None
) -> None:
    writer = open_run(proxy.url(), spool_dir, "window")
    logged = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(200):
            if step == 50:  # the gateway refuses every request for 3 s, mid-run
                proxy.deny = True
                threading.Timer(3.0, lambda: setattr(proxy, "deny", False)).start()
            writer.log_metrics({"loss": step / 200}, step)
            logged.append((step, step / 200))
            time.sleep(0.01)
        time.sleep(3.2 - 1.5)  # the window is over
        writer.record(End("FINISHED", now_ms()))
        assert writer.close(60)
    said = [str(w.message) for w in caught]
    assert any("refuses the credentials" in m and "401" in m for m in said), said
    assert not any(PASSWORD in m for m in said)
    assert proxy.refused > 0  # the window did refuse requests
    run_id = run_named(mlflow_server, "window")
    assert exactly_once_problems(MlflowClient(mlflow_server), run_id, {"loss": logged}) == []
    assert MlflowClient(mlflow_server).get_run(run_id).info.status == "FINISHED"


@pytest.mark.parametrize("given", ["env", "bearer", "uri"])
def test_sync_takes_credentials_as_mlflow_does_and_keeps_the_spool_without_them(
    mlflow_server: str,
    proxy: AuthProxy,
    spool_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    restore_environ: None,
    given: str,
) -> None:
    proxy.stop()  # an outage: the run is spooled, with credentials in its URI
    writer = open_run(proxy.url(), spool_dir, f"spooled-{given}")
    logged = [(step, step / 10) for step in range(20)]
    for step, value in logged:
        writer.log_metrics({"loss": value}, step)
    writer.record(End("FINISHED", now_ms()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not writer.close(2)
    [spool] = list_spools(spool_dir)
    stored = b"".join(p.read_bytes() for p in spool.path.rglob("*") if p.is_file())
    assert PASSWORD.encode() not in stored
    proxy.start()
    for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    capfd.readouterr()

    assert cli(["sync"]) == 2  # no credentials: refused, kept, and said why
    err = capfd.readouterr().err
    assert "not authorized (401)" in err
    assert "MLFLOW_TRACKING_USERNAME" in err
    assert PASSWORD not in err
    assert spool.path.is_dir()

    if given == "env":
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", USER)
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORD)
        assert cli(["sync"]) == 0
    elif given == "bearer":  # MLFLOW_TRACKING_TOKEN
        monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", TOKEN)
        assert cli(["sync"]) == 0
    else:
        assert cli(["sync", "--tracking-uri", proxy.url()]) == 0
    out = capfd.readouterr().out
    assert PASSWORD not in out
    assert TOKEN not in out
    assert not spool.path.exists()
    run_id = run_named(mlflow_server, f"spooled-{given}")
    assert exactly_once_problems(MlflowClient(mlflow_server), run_id, {"loss": logged}) == []


def test_a_password_in_the_tracking_uri_is_printed_by_no_line(
    mlflow_server: str,
    proxy: AuthProxy,
    spool_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    restore_environ: None,
) -> None:
    """``http://user:password@host``, as a new user writes it: the run is stored through the
    authenticating gateway, and neither our lines nor MLflow's own ("View run ... at", printed
    when the run ends) carry the password; nor do the commands that read the run back."""
    for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    uri = proxy.url()
    with active_tracking_uri(uri, monkeypatch):

        @mfp.fingerprinted(experiment="auth-uri", run_name="uri-run", flush_timeout_s=30)
        def train() -> None:
            mlflow.log_param("lr", 0.1)  # the user's own call, through MLflow's fluent API
            for step in range(5):
                mfp.log_metrics({"loss": step / 5}, step=step)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            train()
        run_id = run_named(mlflow_server, "uri-run", "auth-uri")
        for argv in (["show", run_id], ["diff", run_id, run_id]):
            assert cli([*argv, "--tracking-uri", uri]) == 0
    said = capfd.readouterr()
    printed = said.out + said.err + "".join(str(w.message) for w in caught)
    assert "View run uri-run at: http://127.0.0.1" in said.out  # MLflow's line, without it
    assert PASSWORD not in printed
    run = MlflowClient(mlflow_server).get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params["lr"] == "0.1"
    logged = [(step, step / 5) for step in range(5)]
    assert exactly_once_problems(MlflowClient(mlflow_server), run_id, {"loss": logged}) == []
