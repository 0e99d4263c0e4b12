"""The REST reader's pure parts: which URIs it serves, proxied artifact roots, error wording."""

from __future__ import annotations

import json

import pytest

from mlflow_fingerprint.tracking import rest


class Response:
    """A server's answer as ``requests`` hands it over: a status, a text, its JSON."""

    def __init__(self, status_code: int, text: str) -> None:
        self.status_code = status_code
        self.text = text

    def json(self) -> object:
        return json.loads(self.text)


def test_serves_only_http_without_mlflow_only_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rest, "CREDENTIALS_FILE", rest.Path("/nonexistent/credentials"))
    assert not rest.serves("sqlite:///x.db")
    assert not rest.serves("databricks")
    monkeypatch.setenv("MLFLOW_TRACKING_AUTH", "my_plugin")
    assert not rest.serves("http://127.0.0.1:5000")


def test_proxied_root() -> None:
    assert rest.proxied_root("mlflow-artifacts:/1/abc/artifacts") == "1/abc/artifacts"
    assert rest.proxied_root("mlflow-artifacts://other:5000/1/abc/artifacts") is None
    assert rest.proxied_root("s3://bucket/1/abc/artifacts") is None


def test_errors_are_worded_as_mlflows_client_words_them() -> None:
    answer = Response(404, '{"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no run x"}')
    error = rest._error(answer, "runs/get")
    assert (str(error), error.error_code) == (
        "RESOURCE_DOES_NOT_EXIST: no run x",
        "RESOURCE_DOES_NOT_EXIST",
    )
    gateway = rest._error(Response(502, "<html>bad gateway</html>"), "runs/get")
    assert gateway.error_code == "502"
    assert "failed with error code 502 != 200" in str(gateway)
    with pytest.raises(rest.StoreError, match="not in a valid JSON format"):
        rest._body(Response(200, "[]"), "runs/get")
