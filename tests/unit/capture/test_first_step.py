"""The first step's record: bounded digests of weights and batches, and draws before seeding
(``capture/first_step.py``; the optimizer hook that takes them: tests/system/test_step_zero.py)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

from mlflow_fingerprint.capture.first_step import (
    SAMPLE_BYTES,
    _mode,
    batch_record,
    compiled,
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


def test_compiled_code_is_read_with_its_backend_and_mode() -> None:
    """A model compiled with the eager backend (no C++ compiler needed) and run forward and
    backward, in this process: the reader sees Dynamo's graph and the backend torch.compile was
    asked for, with the mode a named backend keeps."""
    compiled_model = torch.compile(torch.nn.Linear(4, 2), backend="eager")
    compiled_model(torch.ones(3, 4)).sum().backward()
    found = compiled()
    assert found["ran"] is True
    assert "eager" in found["backend"].split(", ")
    torch.compile(torch.nn.Linear(2, 2), backend="aot_eager", mode="reduce-overhead")
    found = compiled()
    modes = dict(zip(found["backend"].split(", "), found["mode"].split(", "), strict=True))
    assert (modes["eager"], modes["aot_eager"]) == ("default", "reduce-overhead")


def test_inductor_keeps_its_mode_only_as_options_and_the_reader_names_it_back() -> None:
    """Inductor's wrapper keeps the options its mode set, not the mode: the reader finds the
    largest of inductor's own modes whose options it holds. The wrapper is built here around the
    options torch's own table gives each mode (building it through torch.compile imports
    inductor's compiler, about 5 s)."""
    import sys

    import torch._inductor

    def wrapper(options: dict[str, Any]) -> Any:
        made = object.__new__(torch._TorchCompileInductorWrapper)
        made.config = dict(options)
        return made

    for mode in ("max-autotune", "max-autotune-no-cudagraphs", "reduce-overhead"):
        assert _mode(wrapper(torch._inductor.list_mode_options(mode)), sys.modules) == mode
    assert _mode(wrapper({}), sys.modules) == "default"
    assert _mode(wrapper({"max_autotune": True}), sys.modules) == "default"  # no whole mode


def test_a_process_that_never_imported_dynamo_compiled_nothing_and_is_not_made_to() -> None:
    """The module table of this process without torch._dynamo (a program that never compiled):
    nothing ran (a real such process: tests/system/test_step_zero_runs.py's quickstart)."""
    import sys

    without = {k: v for k, v in sys.modules.items() if not k.startswith("torch._dynamo")}
    assert compiled(without) == {"ran": False, "backend": None, "mode": None}
