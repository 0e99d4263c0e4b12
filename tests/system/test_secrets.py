"""Planted secrets must reach no stored run: not a tag, param, metric name or artifact byte.

Secrets are planted where real ones live: the environment (AWS, Hugging Face, MLflow, GitHub
and generically named ``*_TOKEN``/``*_SECRET``/``*_PASSWORD``/``*_KEY`` variables), the git
remote URL, the uncommitted diff of the training code, and the tracking URI itself
(``http://user:password@host``). A decorated training then runs against the team server, and
everything stored is searched: every tag, param, metric key and artifact (all downloaded), the
whole PostgreSQL database (pg_dump) and every object in the S3 bucket.
"""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from support.gitrepo import git
from support.mlflow_team import MlflowServer
from support.postgres import Postgres
from support.s3 import S3Store
from support.stored import fetch_everything, find_planted

# Values shaped like the real thing, each unique enough that a hit cannot be a coincidence.
PLANTED_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIAQ7PLANTEDX4K2M9Z",
    "AWS_SECRET_ACCESS_KEY": "wJalrPLANTEDxUtnFEMI/K7MDENG/bPxRfiCYzq8sEcR",
    "AWS_SESSION_TOKEN": "FwoGZXIvYXdzPLANTEDsessionTOKEN0k2jd8s9d7f6g5h4",
    "HF_TOKEN": "hf_PLANTEDaBcDeFgHiJkLmNoPqRsTuVwXyZ012345",
    "HUGGING_FACE_HUB_TOKEN": "hf_PLANTEDzYxWvUtSrQpOnMlKjIhGfEdCbA987654",
    "MLFLOW_TRACKING_PASSWORD": "mlflow-PLANTED-pass-7Hq2",
    "GITHUB_TOKEN": "ghp_PLANTEDa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6",
    "GH_TOKEN": "github_pat_11PLANTED0abcdefghijklmnop_QRSTUVWXYZ0123456789abcdef",
    "ACME_API_TOKEN": "acme-PLANTED-9f8e7d6c5b4a",
    "ACME_CLIENT_SECRET": "cs-PLANTED-1029384756",
    "ACME_DB_PASSWORD": "pw-PLANTED-Tr0ub4dor&3",
    "ACME_SIGNING_KEY": "sk-PLANTED-55aa66bb77cc",
}
GIT_TOKEN = "glpat-PLANTEDgitRemote0xYz98"
URI_PASSWORD = "uri-PLANTED-s3cr3t-Pa55"
PLANTED = {**PLANTED_ENV, "git remote token": GIT_TOKEN, "tracking URI password": URI_PASSWORD}


@pytest.fixture(params=["credentials-in-uri", "plain-uri"])
def planted(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, team_uri: str
) -> str:
    """The environment and a git repository (the working directory) with secrets in them, and
    the tracking URI with (or, to check the rest on its own, without) a password in it; returns
    the tracking URI the training uses."""
    for name, value in PLANTED_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "alice")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "train.py").write_text("lr = 0.1\n")
    git(repo, "add", "train.py")
    git(repo, "commit", "-q", "-m", "first")
    git(repo, "remote", "add", "origin", f"https://oauth2:{GIT_TOKEN}@gitlab.example.com/t/r.git")
    git(repo, "remote", "add", "mirror", f"https://bot:{GIT_TOKEN}@github.com/t/r.git")
    # An uncommitted edit that pastes secrets into the code: the diff becomes an artifact.
    (repo / "train.py").write_text(
        f"lr = 0.1\nhf = '{PLANTED_ENV['HF_TOKEN']}'\napi = '{PLANTED_ENV['ACME_API_TOKEN']}'\n"
    )
    monkeypatch.chdir(repo)
    parts = urlsplit(team_uri)
    uri = team_uri
    if request.param == "credentials-in-uri":
        uri = f"{parts.scheme}://alice:{URI_PASSWORD}@{parts.netloc}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    import mlflow

    mlflow.set_tracking_uri(uri)
    return uri


def train_planted(experiment: str) -> None:
    @mfp.fingerprinted(
        experiment=experiment,
        run_name="planted",
        seed=0,
        tags={"note": f"token={PLANTED_ENV['ACME_API_TOKEN']}"},
    )
    def train() -> dict[str, float]:
        for step in range(10):
            mfp.log_metrics({"loss": 1.0 / (step + 1)}, step=step)
        return {"val_error": 0.1}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train()


def pg_dump(pg: Postgres) -> str:
    dump = subprocess.run(
        [str(pg.bin_dir / "pg_dump"), "-h", "127.0.0.1", "-p", str(pg.port), "-U", "mfp", "mlflow"],
        env={"PGPASSWORD": pg.password},
        capture_output=True,
        check=True,
    )
    return dump.stdout.decode(errors="replace")


def test_no_planted_secret_in_anything_stored(
    planted: str,
    team_uri: str,
    team_server: MlflowServer,
    team_postgres: Postgres,
    team_s3: S3Store,
    experiment_name: str,
    tmp_path: Path,
    spool_dir: Path,
) -> None:
    train_planted(experiment_name)
    client = MlflowClient(team_uri)  # read back without the credentials
    exp = client.get_experiment_by_name(experiment_name)
    leftovers = sorted(str(p) for p in spool_dir.rglob("*") if p.is_file())
    assert exp is not None, f"the run never reached the server; spool: {leftovers}"
    [run] = client.search_runs([exp.experiment_id])
    assert len(client.get_metric_history(run.info.run_id, "loss")) == 10

    stored = fetch_everything(client, run.info.run_id, tmp_path / "download")
    assert layout.FINGERPRINT_ARTIFACT in stored.artifacts
    assert stored.tags.get(layout.TAG_HASH)
    assert find_planted(stored, PLANTED) == []

    database = pg_dump(team_postgres)
    assert run.info.run_id in database
    assert [name for name, value in PLANTED.items() if value in database] == []

    hits = []
    for key in team_s3.list_keys():
        data = team_s3.read(key).decode("utf-8", errors="replace")
        hits += [
            f"{name} in s3://{team_s3.bucket}/{key}"
            for name, value in PLANTED.items()
            if value in data
        ]
    assert hits == []


@pytest.mark.parametrize("planted", ["plain-uri"], indirect=True)
def test_no_planted_secret_in_a_run_uploaded_by_sync(
    planted: str,
    team_uri: str,
    team_server: MlflowServer,
    experiment_name: str,
    tmp_path: Path,
    spool_dir: Path,
) -> None:
    """The offline path: spooled while the server was down, uploaded by ``fingerprint sync``."""
    team_server.kill()
    train_planted(experiment_name)
    spooled = "\n".join(
        p.read_bytes().decode("utf-8", errors="replace")
        for p in spool_dir.rglob("*")
        if p.is_file()
    )
    assert [name for name, value in PLANTED.items() if value in spooled] == [], "in the spool"
    team_server.start()
    from mlflow_fingerprint.cli.main import main

    assert main(["sync", "--tracking-uri", team_uri]) == 0
    client = MlflowClient(team_uri)
    [run] = client.search_runs([client.get_experiment_by_name(experiment_name).experiment_id])
    stored = fetch_everything(client, run.info.run_id, tmp_path / "download")
    assert stored.tags.get(layout.TAG_HASH)
    assert find_planted(stored, PLANTED) == []
