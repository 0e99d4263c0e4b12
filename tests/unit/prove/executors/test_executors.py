"""``--executor`` read without reaching any cluster (``prove/executors/__init__.py``): each
spelling it takes, one line for any other, and one line where a cluster's client is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlflow_fingerprint.errors import UsageError
from mlflow_fingerprint.prove.executors import ExecutorSpec, executor_for
from mlflow_fingerprint.prove.process import LocalProcess


@pytest.mark.parametrize(
    ("spec", "engine", "where"),
    [
        (None, "local", None),
        ("local", "local", None),
        ("ray://head:10001", "ray", "ray://head:10001"),
        ("ray+http://head:8265", "ray", "http://head:8265"),
        ("ray+https://head:8265", "ray", "https://head:8265"),
        ("slurm", "slurm", None),
        ("slurm:gpu", "slurm", "gpu"),
    ],
)
def test_each_spelling_names_its_engine_and_where(spec, engine, where) -> None:
    assert ExecutorSpec.parse(spec) == ExecutorSpec(engine, where)


@pytest.mark.parametrize("spec", ["http://head:8265", "slurmx", "ray:/head", ""])
def test_anything_else_is_refused_in_one_line(spec: str) -> None:
    with pytest.raises(UsageError, match="--executor takes ray://HOST:PORT") as caught:
        ExecutorSpec.parse(spec)
    assert "\n" not in str(caught.value)


def test_the_local_executor_is_a_process_group_here() -> None:
    assert executor_for(None) == LocalProcess()


def test_slurm_without_its_client_on_the_path_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UsageError, match="sinfo is not on the PATH"):
        executor_for("slurm:gpu")
