"""``environ_copy``: one consistent copy of the environment while another thread changes it (the
churn shows a plain copy failing beside it first)."""

from __future__ import annotations

import os

import pytest

from mlflow_fingerprint.environment import environ_copy
from mlflow_fingerprint.redact import secret_env_values
from support.env_churn import churning_environment

COPIES = 300


def test_a_copy_is_whole_while_another_thread_sets_and_unsets_a_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MFP_STEADY", "kept")
    with churning_environment():
        copies = [environ_copy() for _ in range(COPIES)]
    assert all(copy["MFP_STEADY"] == "kept" for copy in copies)
    assert all(copy.get("PATH") == os.environ.get("PATH") for copy in copies)


def test_the_secret_scan_of_the_environment_survives_the_same_churn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_API_TOKEN", "s3cr3t-value-42")
    with churning_environment():
        found = [secret_env_values() for _ in range(COPIES // 3)]
    assert all("s3cr3t-value-42" in values for values in found)


def test_a_copy_holds_the_environment_and_is_the_callers_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MFP_SET_HERE", "here")
    monkeypatch.delenv("MFP_NOT_SET_HERE", raising=False)
    copy = environ_copy()
    assert copy["MFP_SET_HERE"] == "here"
    assert "MFP_NOT_SET_HERE" not in copy
    copy["MFP_NOT_SET_HERE"] = "1"
    assert "MFP_NOT_SET_HERE" not in os.environ
