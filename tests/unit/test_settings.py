"""Tuning variables: a value that does not parse falls back to its default with one warning, and
never breaks ``import mlflow`` (our run context provider is loaded by it) or ``start_run``."""

from __future__ import annotations

import warnings

import pytest

from mlflow_fingerprint.errors import FingerprintWarning
from mlflow_fingerprint.settings import DEFAULT_DIFF_CAP_BYTES, Settings, settings


def test_valid_values_are_read() -> None:
    got = settings(
        {
            "MLFLOW_FINGERPRINT_PROBE_TIMEOUT": "2.5",
            "MLFLOW_FINGERPRINT_GATHER_TIMEOUT": "30",
            "MLFLOW_FINGERPRINT_GIT_DIFF": "1000",
            "MLFLOW_FINGERPRINT_DISABLE": "yes",
        }
    )
    assert got == Settings(2.5, 30.0, "redacted", 1000, True)
    assert settings({"MLFLOW_FINGERPRINT_GIT_DIFF": "off"}).git_diff == "off"
    assert settings({}) == Settings()
    assert settings({"MLFLOW_FINGERPRINT_GIT_DIFF": "Redacted"}).git_diff_cap_bytes == (
        DEFAULT_DIFF_CAP_BYTES
    )
    assert settings({"MLFLOW_FINGERPRINT_WATCH_STEPS": " 20, 21,"}).watch_steps == (20, 21)
    assert settings({"MLFLOW_FINGERPRINT_WATCH_STEPS": ""}).watch_steps == ()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("MLFLOW_FINGERPRINT_PROBE_TIMEOUT", "10s"),
        ("MLFLOW_FINGERPRINT_PROBE_TIMEOUT", "nan"),
        ("MLFLOW_FINGERPRINT_PROBE_TIMEOUT", "-1"),
        ("MLFLOW_FINGERPRINT_GATHER_TIMEOUT", "2m"),
        ("MLFLOW_FINGERPRINT_GIT_DIFF", "redact"),
        ("MLFLOW_FINGERPRINT_GIT_DIFF", "-5"),
        ("MLFLOW_FINGERPRINT_DISABLE", "maybe"),
        ("MLFLOW_FINGERPRINT_WATCH_STEPS", "20;21"),
        ("MLFLOW_FINGERPRINT_WATCH_STEPS", "-3"),
        ("MLFLOW_FINGERPRINT_WATCH_STEPS", "1.5"),
    ],
)
def test_a_bad_value_falls_back_with_one_warning(name: str, text: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = settings({name: text})
        second = settings({name: text})
    assert first == second == Settings()
    messages = [str(w.message) for w in caught if w.category is FingerprintWarning]
    assert len(messages) == 1, messages
    assert name in messages[0]
    assert repr(text) in messages[0]
