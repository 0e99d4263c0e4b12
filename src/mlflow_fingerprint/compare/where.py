"""Where inside a step two runs part: the first watched tensor that differs.

``mfp.watch`` records, at chosen steps and in execution order, a digest of every module's input
and output, every gradient and every updated parameter (``model/watched.py``). Given the first
step where a metric's curves part, the earliest step both runs watched, up to that one, in
which a record differs is where the difference starts: its first differing record names the
phase (``forward``, ``backward``, ``optimizer``), the module, whether what went into it was
equal, and how large the difference is (relative difference of the norms: the tensors
themselves are not stored).

Why "up to" the divergence step: a metric logged after the update of step ``k`` shows a change
in that update only at step ``k + 1`` (a learning rate changed at step 20 moves the loss at step
21); and bits can differ well before they reach the logged value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..model.vocabulary import Phase
from ..model.watched import INPUT, TensorRecord

AROUND = 3  # records each side of the first difference shown in the small table
Inputs = Literal["input", "forward pass", "gradients"]
# What a tensor of each phase is computed from, as the report names it.
INPUTS_OF: dict[Phase, Inputs] = {
    "forward": "input",
    "backward": "forward pass",
    "optimizer": "gradients",
}

# (equal, different) as the report says it of each kind of inputs.
INPUT_PHRASES: dict[Inputs, tuple[str, str]] = {
    "input": ("its input is equal", "its input differs too"),
    "forward pass": ("the step's forward pass is equal", "the step's forward pass differs too"),
    "gradients": ("the step's gradients are equal", "the step's gradients differ too"),
}


def rel_diff(a: float | None, b: float | None) -> float | None:
    """``|b - a| / |a|``; 0 where both are equal, None where it cannot be said."""
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return None
    if a == b:
        return 0.0
    return abs(b - a) / abs(a) if a != 0 else None


@dataclass(frozen=True)
class Neighbour:
    """One row of the table around the first difference."""

    phase: Phase
    name: str
    kind: str
    equal: bool
    rel_diff: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "tensor": self.name,
            "type": self.kind,
            "equal": self.equal,
            "rel_diff": self.rel_diff,
        }


@dataclass(frozen=True)
class Where:
    """The first tensor that differs, and around it."""

    step: int
    phase: Phase
    module: str
    kind: str
    tensor: str
    name: str
    inputs: Inputs | None  # None: the tensor is itself a module's input
    inputs_equal: bool | None
    rel_diff: float | None
    norm_a: float | None
    norm_b: float | None
    only_in: Literal["A", "B"] | None = None  # the tensor exists in one run only
    around: tuple[Neighbour, ...] = ()

    def sentence(self) -> str:
        """'step 20, optimizer: features.0.weight (Conv2d) differs; its gradients are equal'."""
        what = f"step {self.step}, {self.phase}: {self.name} ({self.kind})"
        if self.only_in is not None:
            return f"{what} is only in run {self.only_in}"
        parts = [f"{what} differs"]
        if self.inputs is None:
            parts.append("it is a module's input: what came before it differs")
        elif self.inputs_equal is not None:
            parts.append(INPUT_PHRASES[self.inputs][0 if self.inputs_equal else 1])
        if self.rel_diff is not None:
            parts.append(f"relative difference of the norms {self.rel_diff:.3g}")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "phase": self.phase,
            "module": self.module,
            "type": self.kind,
            "tensor": self.tensor,
            "name": self.name,
            "inputs": self.inputs,
            "inputs_equal": self.inputs_equal,
            "rel_diff": self.rel_diff,
            "norm_a": _finite(self.norm_a),
            "norm_b": _finite(self.norm_b),
            "only_in": self.only_in,
            "around": [n.to_dict() for n in self.around],
            "sentence": self.sentence(),
        }


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _by_step(records: Sequence[TensorRecord]) -> dict[int, list[TensorRecord]]:
    steps: dict[int, list[TensorRecord]] = {}
    for r in records:
        steps.setdefault(r.step, []).append(r)
    return steps


def _inputs_equal(
    record: TensorRecord, a: Sequence[TensorRecord], b: dict[tuple[Any, ...], TensorRecord]
) -> bool | None:
    """Whether what ``record`` was computed from was equal in both runs (None: not watched)."""
    if record.phase == "forward":
        if record.tensor == INPUT:
            return None
        key = (record.step, "forward", record.module, INPUT, record.call)
        mine = next((r for r in a if r.key == key), None)
        other = b.get(key)
        return None if mine is None or other is None else mine.same_tensor(other)
    source: Phase = "forward" if record.phase == "backward" else "backward"
    pairs = [(r, b.get(r.key)) for r in a if r.phase == source]
    if not pairs:
        return None
    return all(o is not None and r.same_tensor(o) for r, o in pairs)


def _around(
    step_a: Sequence[TensorRecord], index: int, b: dict[tuple[Any, ...], TensorRecord]
) -> tuple[Neighbour, ...]:
    phase = step_a[index].phase
    rows = []
    for r in step_a[max(0, index - AROUND) : index + AROUND + 1]:
        if r.phase != phase:
            continue
        other = b.get(r.key)
        rows.append(
            Neighbour(
                r.phase,
                r.name,
                r.kind,
                other is not None and r.same_tensor(other),
                rel_diff(r.norm, other.norm) if other is not None else None,
            )
        )
    return tuple(rows)


def _first_in_step(a: list[TensorRecord], b: list[TensorRecord]) -> Where | None:
    b_by_key = {r.key: r for r in b}
    for i, r in enumerate(a):
        other = b_by_key.get(r.key)
        if other is not None and r.same_tensor(other):
            continue
        return Where(
            step=r.step,
            phase=r.phase,
            module=r.module,
            kind=r.kind,
            tensor=r.tensor,
            name=r.name,
            inputs=None if (r.phase == "forward" and r.tensor == INPUT) else INPUTS_OF[r.phase],
            inputs_equal=_inputs_equal(r, a, b_by_key),
            rel_diff=rel_diff(r.norm, other.norm) if other is not None else None,
            norm_a=r.norm,
            norm_b=other.norm if other is not None else None,
            only_in="A" if other is None else None,
            around=_around(a, i, b_by_key),
        )
    a_keys = {r.key for r in a}
    extra = next((r for r in b if r.key not in a_keys), None)
    if extra is None:
        return None
    return Where(
        extra.step, extra.phase, extra.module, extra.kind, extra.tensor, extra.name,
        None, None, None, None, extra.norm, only_in="B",
    )  # fmt: skip


def locate(
    a: Sequence[TensorRecord], b: Sequence[TensorRecord], divergence_step: int
) -> tuple[Where | None, str | None]:
    """The first differing tensor at or before ``divergence_step``, or a note saying why none is
    named (the step was not watched by both runs, or every watched tensor is equal)."""
    steps_a, steps_b = _by_step(a), _by_step(b)
    both = sorted(s for s in set(steps_a) & set(steps_b) if s <= divergence_step)
    for step in both:
        found = _first_in_step(steps_a[step], steps_b[step])
        if found is not None:
            return found, None
    if divergence_step in steps_a and divergence_step in steps_b:
        return None, (
            f"every tensor mfp.watch recorded is equal up to step {divergence_step}, where the "
            "curves part: the difference arises outside the watched model"
        )
    watched = ", ".join(str(s) for s in both) or "none"
    return None, (
        f"step {divergence_step}, where the curves part, was not watched by both runs "
        f"(watched by both up to it: {watched}; every watched tensor is equal); "
        f"mfp.watch(model, steps=[{divergence_step}]) names the tensor where they part"
    )
