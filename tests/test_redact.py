"""Credentials never survive into what we record."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.redact import redact_text, secret_env_values, strip_url_credentials


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://user:secret-token@example.com/r.git", "https://example.com/r.git"),
        ("https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/o/r", "https://github.com/o/r"),
        ("http://u:p%40ss@host:8080/x?y=1", "http://host:8080/x?y=1"),
        ("git@github.com:org/repo.git", "git@github.com:org/repo.git"),
        ("ssh://git@host/r.git", "ssh://host/r.git"),
        ("https://example.com/r.git", "https://example.com/r.git"),
    ],
)
def test_strip_url_credentials(url: str, expected: str) -> None:
    assert strip_url_credentials(url) == expected


def test_redact_text_masks_urls_tokens_and_known_values() -> None:
    text = (
        "uri=https://admin:hunter2@mlflow.example.com key=AKIAABCDEFGHIJKLMNOP "
        "hf=hf_abcdefghijklmnopqrstuvwxyz gh=ghp_abcdefghijklmnopqrstuvwxyz012345 other=s3cr3tvalue"
    )
    out = redact_text(text, {"s3cr3tvalue"})
    for secret in (
        "hunter2",
        "AKIAABCDEFGHIJKLMNOP",
        "hf_abcdefghijklmnop",
        "ghp_abcdefghij",
        "s3cr3tvalue",
    ):
        assert secret not in out
    assert "mlflow.example.com" in out


def test_secret_env_values_by_name() -> None:
    env = {
        "MY_API_TOKEN": "abcdef123",
        "DB_PASSWORD": "pw-123456",
        "AWS_SECRET_ACCESS_KEY": "x" * 40,
        "HOME": "/root",
        "SHORT_TOKEN": "ab",
    }
    assert secret_env_values(env) == {"abcdef123", "pw-123456", "x" * 40}
