"""Credentials never survive into what we record."""

from __future__ import annotations

import time

import pytest

from mlflow_fingerprint.redact import (
    RedactionTimeout,
    found_secrets,
    redact_text,
    secret_env_values,
    strip_url_credentials,
)


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


def test_a_records_own_names_are_kept_when_keywords_are_off() -> None:
    """``google-auth`` and ``detect-secrets`` are package names in a fingerprint, not secrets."""
    record = '{"packages": {"google-auth": "2.62.2", "detect-secrets": "1.5.0"}}'
    assert redact_text(record, set(), keywords=False) == record
    assert "2.62.2" not in redact_text(record)  # as free text, a value given to "auth" goes


def test_found_secrets_takes_what_the_scanner_masks_inside_a_value() -> None:
    settings = '{"user": "svc", "password": "Tr0ub4dor-and-3"}'
    found = found_secrets(settings)
    assert "Tr0ub4dor-and-3" in found
    assert settings in found
    assert found_secrets("plain value with nothing secret") == set()
    env = {"SETTINGS": settings, "HOME": "/root"}
    assert "Tr0ub4dor-and-3" in secret_env_values(env)
    assert "/root" not in secret_env_values(env)


def test_a_long_text_is_scanned_in_chunks_and_stops_at_its_deadline() -> None:
    line = "+    loss = model(batch) * weight  # a line of code\n"
    token = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    text = line * 5000 + f"+TOKEN = '{token}'\n" + line * 5000
    out = redact_text(text)
    assert token not in out
    assert out.count("\n") == text.count("\n")
    with pytest.raises(RedactionTimeout):
        redact_text(text, deadline=time.monotonic() - 1)
