"""``mfp.watch`` (``run/watch.py``) without training: which steps it watches, what it reads of a
module's inputs and outputs, and what a watched step that the run ended inside leaves (a forward
and a backward pass of a real model, no optimizer step: that is the system tier's,
``tests/system/test_watch.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from torch import nn

from mlflow_fingerprint import layout
from mlflow_fingerprint.model.watched import decode
from mlflow_fingerprint.run.digest import Weights, reduce
from mlflow_fingerprint.run.watch import (
    _first_input,
    _inner,
    _steps,
    _tensors,
    default_steps,
    watch,
    watch_into,
)


def test_the_default_steps_are_the_first_three_then_the_powers_of_two() -> None:
    assert default_steps() == (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
    assert default_steps(first=1, count=4) == (0, 1, 2, 4)
    assert _steps(None) == frozenset(default_steps())
    assert _steps([3, 1]) == frozenset({1, 3})


@pytest.mark.parametrize("steps", [[-1], [1.5], [True], ["2"]])
def test_a_step_that_is_no_non_negative_integer_is_refused(steps: list[Any]) -> None:
    with pytest.raises(ValueError, match="steps must be non-negative integers"):
        _steps(steps)


def test_a_module_s_tensors_are_its_output_s_leaves_and_its_first_tensor_input() -> None:
    x, y = torch.zeros(2), torch.ones(3)
    assert _tensors(x) == [x]
    assert [t is y for t in _tensors({"a": (x, "text"), "b": [y]})] == [False, True]
    assert len(_tensors(tuple(torch.zeros(1) for _ in range(20)))) == 8
    assert _first_input((3, "s"), {"mask": x}) is x
    assert _first_input((), {}) is None


def test_a_wrapped_model_is_watched_as_the_model_it_wraps() -> None:
    model = nn.Linear(2, 2)
    assert _inner(nn.DataParallel(model)) is model
    assert _inner(model) is model


@dataclass
class Writer:
    records: list[tuple[Any, Callable[[], bytes]]] = field(default_factory=list)

    def record(self, event: Any, produce: Callable[[], bytes]) -> None:
        self.records.append((event, produce))


def test_a_step_the_run_ended_inside_is_written_as_far_as_it_got_marked_partial() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    writer = Writer()
    handle = watch_into(writer, model, steps=[0])
    x = torch.randn(5, 3)
    model(x).sum().backward()
    handle.close()
    assert handle.closed
    ((event, produce),) = writer.records
    assert event.file == layout.STEPS_ARTIFACT
    records = decode(produce())
    assert {r.partial for r in records} == {True}
    assert {r.step for r in records} == {0}
    taken = {(r.phase, r.module, r.tensor) for r in records}
    assert ("forward", "", "input") in taken
    assert ("forward", "2", "output") in taken
    assert ("backward", "0", "weight") in taken
    first = next(r for r in records if (r.phase, r.module, r.tensor) == ("forward", "", "input"))
    assert (first.digest, first.norm) == reduce(x, Weights()).value()
    assert first.shape == (5, 3)
    model(x)  # the hooks are gone: nothing more is taken
    assert len(writer.records) == 1


def test_no_steps_or_no_run_watch_nothing() -> None:
    model = nn.Linear(2, 2)
    assert watch_into(Writer(), model, steps=()).closed
    assert watch_into(None, model).closed  # another rank's process
    with pytest.warns(Warning, match="outside a fingerprinted run"):
        assert watch(model).closed
