"""Reruns as Ray jobs (``prove/executors/ray.py``), without a cluster: one line where Ray's job
client is missing or the address answers nothing, and Ray's own logging held to errors while a
job is submitted. ``tests/system/test_cluster_ray.py`` runs jobs on a real Ray cluster."""

from __future__ import annotations

import importlib.util
import logging

import pytest

from mlflow_fingerprint.errors import UsageError
from mlflow_fingerprint.prove.executors.ray import RayJobs, _client, _quiet_ray


def test_no_client_or_no_cluster_is_one_line() -> None:
    with pytest.raises(UsageError) as caught:
        _client("http://127.0.0.1:9")  # the discard port: nothing answers
    message = str(caught.value)
    assert "\n" not in message
    if importlib.util.find_spec("ray") is None:
        assert message == (
            "--executor ray needs Ray's job client: pip install 'mlflow-fingerprint[ray]'"
        )
    else:
        assert message.startswith("--executor ray: cannot reach http://127.0.0.1:9")


def test_ray_s_logging_is_held_to_errors_while_submitting_and_put_back() -> None:
    logger = logging.getLogger("ray")
    logger.setLevel(logging.INFO)
    try:
        with _quiet_ray():
            assert logger.level == logging.ERROR
        assert logger.level == logging.INFO
    finally:
        logger.setLevel(logging.NOTSET)


def test_jobs_run_the_nodes_python_one_at_a_time_unless_told() -> None:
    jobs = RayJobs("ray://head:10001")
    assert (jobs.python, jobs.slots) == ("python", 1)
