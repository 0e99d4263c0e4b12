"""Seeding helpers and deterministic mode, on real torch, numpy and DataLoader workers."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import mlflow_fingerprint as mfp
from mlflow_fingerprint.run.seeding import apply_determinism, cublas_config_needed


def draws() -> tuple[float, float, float]:
    return random.random(), float(np.random.rand()), float(torch.rand(()))


def test_seed_everything_seeds_python_numpy_and_torch() -> None:
    assert mfp.seed_everything(123) == 123
    first = draws()
    mfp.seed_everything(123)
    assert draws() == first
    mfp.seed_everything(124)
    assert draws() != first


@pytest.mark.parametrize("bad", [-1, 2**32, 1.5, "0", True])
def test_seed_everything_rejects_what_numpy_cannot_take(bad: object) -> None:
    with pytest.raises(ValueError, match="seed"):
        mfp.seed_everything(bad)  # type: ignore[arg-type]


def test_dataloader_generator_leaves_the_global_rng_alone() -> None:
    torch.manual_seed(5)
    expected = torch.rand(())
    torch.manual_seed(5)
    list(DataLoader(range(10), shuffle=True, generator=mfp.dataloader_generator(3)))
    assert torch.equal(torch.rand(()), expected)


@pytest.mark.parametrize(
    ("version", "needed"),
    [
        ("1.8.0", True),
        ("2.9.1+cu128", True),
        ("2.10.0", False),
        ("2.13.0+cpu", False),
        ("3.0.0a0", False),
    ],
)
def test_cublas_workspace_config_only_before_torch_2_10(version: str, needed: bool) -> None:
    assert cublas_config_needed(version) is needed


def determinism_state() -> tuple[object, ...]:
    return (
        torch.backends.cudnn.benchmark,
        torch.backends.cudnn.deterministic,
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    )


def test_warn_mode_sets_warn_only_and_undo_restores_everything() -> None:
    before = determinism_state()
    torch.backends.cudnn.benchmark = True
    try:
        applied = apply_determinism("warn")
        assert torch.backends.cudnn.benchmark is False
        assert torch.backends.cudnn.deterministic is True
        assert torch.are_deterministic_algorithms_enabled() is True
        assert torch.is_deterministic_algorithms_warn_only_enabled() is True
        assert applied.record()["requested"] == "warn"
        # torch 2.13 dropped the cuBLAS check, so the variable is left alone and that is said.
        assert any("not needed" in a for a in applied.record()["actions"])
        assert os.environ.get("CUBLAS_WORKSPACE_CONFIG") == before[4]
        applied.undo()
        assert torch.backends.cudnn.benchmark is True
    finally:
        torch.backends.cudnn.benchmark = before[0]
    assert determinism_state() == before


def test_off_mode_changes_nothing() -> None:
    applied = apply_determinism(False)
    assert applied.record() == {"requested": "off", "actions": []}
