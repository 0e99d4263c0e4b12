"""What a probe is given (``capture/context.py``): a request for deterministic mode as each
switch states it, and the run's facts, read-only."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from mlflow_fingerprint.capture.context import DeterminismRequest, RunInfo


@pytest.mark.parametrize(
    ("value", "mode"),
    [(True, "on"), (False, "off"), (None, "off"), ("warn", "warn"), ("full", "full"), (1, "1")],
)
def test_a_switch_s_value_becomes_a_mode(value: object, mode: str) -> None:
    request = DeterminismRequest.of(value, "lightning.Trainer(deterministic)")
    assert (request.mode, request.by, request.applied) == (
        mode, "lightning.Trainer(deterministic)", None
    )  # fmt: skip


def test_what_the_switch_set_is_kept() -> None:
    applied = ("torch.use_deterministic_algorithms(True)",)
    request = DeterminismRequest.of(True, "mlflow_fingerprint.fingerprinted", applied)
    assert request.applied == applied


def test_the_run_s_facts_cannot_be_changed_by_a_probe() -> None:
    run = RunInfo(requested_seed=3)
    with pytest.raises(FrozenInstanceError):
        run.requested_seed = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        run.declared["batch_size"] = 8  # type: ignore[index]
    assert RunInfo().declared is not RunInfo().declared  # no mapping shared between runs
    assert (run.stage, run.loaders, run.deterministic) == ("capture", (), None)
