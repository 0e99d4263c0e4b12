"""Reruns as Ray jobs (``prove/executors/ray.py``), without a cluster: one line where Ray's job
client is missing, and Ray's own logging held to errors while a job is submitted.
``tests/system/test_cluster_ray.py`` runs jobs on a real Ray cluster."""

from __future__ import annotations

import logging
import sys

import pytest

from mlflow_fingerprint.errors import UsageError
from mlflow_fingerprint.prove.executors.ray import _client, _quiet_ray


def test_without_ray_s_job_client_the_executor_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray.job_submission", None)  # as where Ray is not installed
    with pytest.raises(UsageError) as caught:
        _client("http://127.0.0.1:8265")
    assert str(caught.value) == (
        "--executor ray needs Ray's job client: pip install 'mlflow-fingerprint[ray]'"
    )


def test_ray_s_logging_is_held_to_errors_while_submitting_and_put_back() -> None:
    logger = logging.getLogger("ray")
    logger.setLevel(logging.INFO)
    try:
        with _quiet_ray():
            assert logger.level == logging.ERROR
        assert logger.level == logging.INFO
    finally:
        logger.setLevel(logging.NOTSET)
