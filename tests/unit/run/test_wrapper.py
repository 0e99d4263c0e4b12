"""``fingerprinted`` as a decorator and a context manager (``run/wrapper.py``), without opening a
run: its arguments checked when it is built, and what a run stopped by
``MLFLOW_FINGERPRINT_STOP_AFTER`` does after it ended. Runs are opened in ``tests/system``."""

from __future__ import annotations

import argparse

import pytest

from mlflow_fingerprint.errors import TrainingStopped
from mlflow_fingerprint.run import current
from mlflow_fingerprint.run.wrapper import Fingerprinted, _leave_stopped, fingerprinted


def test_bare_and_called_forms_wrap_the_function_and_keep_its_name() -> None:
    def train(lr: float) -> float:
        """Train."""
        return lr

    wrapped = fingerprinted(train)
    assert wrapped.__name__ == "train"
    assert wrapped.__doc__ == "Train."
    built = fingerprinted(seed=3, deterministic="warn", options=argparse.Namespace(lr=0.1))
    assert isinstance(built, Fingerprinted)
    assert (built.options.seed, built.options.deterministic) == (3, "warn")
    assert dict(built.options.program_options or {}) == {"lr": 0.1}


@pytest.mark.parametrize(
    "bad",
    [
        {"metrics": "sum"},
        {"deterministic": "sometimes"},
        {"seed": -1},
        {"batch_size": -1},
        {"flush_timeout_s": -1.0},
    ],
    ids=["metrics", "deterministic", "seed", "batch_size", "flush_timeout_s"],
)
def test_a_bad_argument_fails_when_the_decorator_is_built(bad: dict) -> None:
    with pytest.raises((ValueError, TypeError)):
        fingerprinted(**bad)


class Sink:
    run_id = "outer"

    def log_metrics(self, values, step=None) -> None:
        del values, step


def test_a_stopped_run_ends_the_process_with_status_0_or_stops_its_outer_run() -> None:
    stop = TrainingStopped(5)
    with pytest.raises(SystemExit) as caught:
        _leave_stopped(stop)
    assert caught.value.code == 0
    with current.entered(Sink()), pytest.raises(TrainingStopped) as again:
        _leave_stopped(stop)
    assert again.value is stop
