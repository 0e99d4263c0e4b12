"""The first step's record: bounded digests of weights and batches, and draws before seeding
(``capture/first_step.py``; the optimizer hook that takes them: tests/system/test_step_zero.py)."""

from __future__ import annotations

import random

import numpy as np
import torch

from mlflow_fingerprint.capture.first_step import (
    SAMPLE_BYTES,
    batch_record,
    generators_before_seeding,
    weights_record,
)
from mlflow_fingerprint.run.seeding import seed_everything


def test_a_large_tensor_is_sampled_and_a_sampled_change_shows() -> None:
    big = torch.zeros(1000, 1000)  # 4 MB: sampled
    small = torch.zeros(10)
    record = weights_record([[big], [small]], torch)
    assert record["tensors"] == 2
    assert record["tensors_sampled"] == 1
    assert record["elements"] == 1_000_010
    assert [g["tensors"] for g in record["groups"]] == [1, 1]
    stride = -(-big.numel() // (SAMPLE_BYTES // 4))
    big.view(-1)[stride] = 1.0  # a sampled element
    assert weights_record([[big], [small]], torch)["digest"] != record["digest"]
    assert weights_record([[big], [small]], torch)["groups"][1] == record["groups"][1]


def test_a_non_contiguous_tensor_is_sampled_like_its_contiguous_copy() -> None:
    t = torch.arange(2000 * 100, dtype=torch.float32).reshape(2000, 100).t()
    assert not t.is_contiguous()
    assert (
        weights_record([[t]], torch)["digest"]
        == weights_record([[t.contiguous()]], torch)["digest"]
    )


def test_a_batch_digest_reads_inputs_and_targets() -> None:
    x, y = torch.ones(4, 3), torch.tensor([0, 1, 0, 1])
    record = batch_record([x, y], torch)
    assert (record["tensors"], record["elements"]) == (2, 16)
    assert batch_record([x, y.flip(0)], torch)["digest"] != record["digest"]
    assert batch_record({"x": x.numpy(), "y": y.numpy()}, None)["tensors"] == 2


def test_draws_before_seeding_are_told_from_fresh_generators() -> None:
    seed_everything(3)
    fresh = generators_before_seeding(torch, 3)
    assert fresh["torch"] == {"drawn": False, "seed": 3, "seed_chosen": True}
    assert fresh["python"]["drawn"] is False
    assert fresh["numpy"]["drawn"] is False
    torch.randn(2)
    random.random()
    np.random.rand()
    drawn = generators_before_seeding(torch, 3)
    assert [drawn[n]["drawn"] for n in ("torch", "python", "numpy")] == [True, True, True]
    torch.manual_seed(2**63 + 5)  # a seed no one chooses: as torch draws one at start-up
    torch.randn(1)
    assert generators_before_seeding(torch, None)["torch"]["seed_chosen"] is False
