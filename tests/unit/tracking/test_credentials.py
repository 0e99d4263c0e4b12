"""Credentials in a tracking URI move to MLflow's variables; a raw reserved character is refused."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.tracking.credentials import for_mlflow


def test_a_server_uri_with_a_raw_reserved_character_in_its_password_is_refused() -> None:
    """No client reads it as meant (the host would be "user"), and their messages showed part of
    the password: refused in one line that shows none of it."""
    from mlflow_fingerprint.errors import ResolveError

    env: dict[str, str] = {}
    with pytest.raises(ResolveError, match="percent-encode it") as caught:
        for_mlflow("http://user:s3cr/etPW@127.0.0.1:5000", env)
    assert "s3cr" not in str(caught.value)
    assert "etPW" not in str(caught.value)
    assert "http://127.0.0.1:5000" in str(caught.value)
    assert env == {}
    # a database URI's driver reads such a password as it is: left to it
    assert for_mlflow("postgresql://u:pa/ss@db/mlflow", env) == "postgresql://u:pa/ss@db/mlflow"


def test_credentials_leave_the_tracking_uri_for_mlflows_variables() -> None:
    env: dict[str, str] = {}
    clean = for_mlflow("https://ali%40ce:p%3Ass@mlflow.example.com:5000/x", env)
    assert clean == "https://mlflow.example.com:5000/x"
    assert env == {"MLFLOW_TRACKING_USERNAME": "ali@ce", "MLFLOW_TRACKING_PASSWORD": "p:ss"}
    mine = {"MLFLOW_TRACKING_USERNAME": "bob", "MLFLOW_TRACKING_PASSWORD": "set-by-user"}
    assert for_mlflow("http://u:p@host", mine) == "http://host"
    assert mine["MLFLOW_TRACKING_PASSWORD"] == "set-by-user"  # MLflow preferred it already
    assert for_mlflow("postgresql://u:p@db/x", env) == "postgresql://u:p@db/x"  # the driver's
