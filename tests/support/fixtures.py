"""pytest fixtures for the team-server path: one PostgreSQL, one S3 store, one mlflow server per
session (killed and restarted by the outage tests).

Registered by the test modules that need them (``pytest_plugins``), so a run of the unit tests
alone starts nothing. PostgreSQL missing is a failure under CI (``CI=true``): the suite that
proves the production path must never turn green by skipping; outside CI it is a skip that says
what to install.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .mlflow_team import MlflowServer
from .postgres import Postgres, find_bin_dir, missing_message, running_postgres
from .procs import InfraError
from .s3 import S3Store, running_s3
from .tracking import active_tracking_uri


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _unavailable(message: str) -> None:
    if in_ci():
        pytest.fail(f"team-server suite cannot run in CI: {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def team_postgres() -> Iterator[Postgres]:
    if find_bin_dir() is None:
        _unavailable(missing_message())
    try:
        with running_postgres() as pg:
            yield pg
    except InfraError as exc:
        pytest.fail(f"PostgreSQL did not start: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def team_s3() -> Iterator[S3Store]:
    try:
        import boto3  # noqa: F401
        import moto  # noqa: F401
    except ImportError as exc:
        _unavailable(f"moto[server] and boto3 are needed for the S3 store ({exc})")
    with running_s3() as store:
        yield store


def _server(pg: Postgres, s3: S3Store, mode: str = "proxied", prefix: str = "") -> MlflowServer:
    return MlflowServer(pg.uri(), f"s3://{s3.bucket}/{prefix}", s3.env, mode=mode)


@pytest.fixture(scope="session")
def team_server(team_postgres: Postgres, team_s3: S3Store) -> Iterator[MlflowServer]:
    """``mlflow server`` on PostgreSQL with artifacts proxied to S3. Outage tests kill it; the
    ``team_uri`` fixture starts it again for the next test (one server: each start costs
    seconds of CI time)."""
    server = _server(team_postgres, team_s3)
    try:
        server.start()
    except InfraError as exc:
        server.close()
        pytest.fail(f"mlflow server did not start: {exc}", pytrace=False)
    yield server
    server.close()


@pytest.fixture
def team_uri(
    team_server: MlflowServer, monkeypatch: pytest.MonkeyPatch, spool_dir: Path
) -> Iterator[str]:
    """The team server's URI, active as the tracking URI, with this test's own spool
    (``spool_dir`` is tests/conftest.py's); the server is started first if an earlier test left
    it down."""
    if not team_server.running:
        team_server.start()
    with active_tracking_uri(team_server.url, monkeypatch) as uri:
        yield uri


@pytest.fixture
def experiment_name(request: pytest.FixtureRequest) -> str:
    """A fresh experiment name per test: the session's store is shared by every test."""
    return f"{request.node.name[:60]}-{uuid.uuid4().hex[:8]}"
