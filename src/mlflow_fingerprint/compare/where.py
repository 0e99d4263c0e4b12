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

A step a run ended inside (its records marked ``partial``) is compared on what both runs
recorded: a tensor the ended run never reached is unknown there, not different, so the report
never says "the optimizer's update is only in run A" of a run that stopped before its update, and
a note says which phases went uncompared.
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


def _partial(records: Sequence[TensorRecord]) -> bool:
    """The run ended inside this step: what it did not record is unknown, not different."""
    return any(r.partial for r in records)


def _inputs_equal(
    record: TensorRecord,
    a: Sequence[TensorRecord],
    b: dict[tuple[Any, ...], TensorRecord],
    b_cut: bool = False,
) -> bool | None:
    """Whether what ``record`` was computed from was equal in both runs (None: not watched, or
    not reached by a run that ended inside the step)."""
    if record.phase == "forward":
        if record.tensor == INPUT:
            return None
        key = (record.step, "forward", record.module, INPUT, record.call)
        mine = next((r for r in a if r.key == key), None)
        other = b.get(key)
        return None if mine is None or other is None else mine.same_tensor(other)
    source: Phase = "forward" if record.phase == "backward" else "backward"
    pairs = [(r, b.get(r.key)) for r in a if r.phase == source]
    if not pairs or (b_cut and any(o is None for _, o in pairs)):
        return None
    return all(o is not None and r.same_tensor(o) for r, o in pairs)


def _around(
    step_a: Sequence[TensorRecord],
    index: int,
    b: dict[tuple[Any, ...], TensorRecord],
    b_cut: bool = False,
) -> tuple[Neighbour, ...]:
    phase = step_a[index].phase
    rows = []
    for r in step_a[max(0, index - AROUND) : index + AROUND + 1]:
        other = b.get(r.key)
        if r.phase != phase or (other is None and b_cut):  # not reached: neither equal nor not
            continue
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
    a_cut, b_cut = _partial(a), _partial(b)
    for i, r in enumerate(a):
        other = b_by_key.get(r.key)
        if other is None and b_cut:
            continue  # run B ended before it reached this tensor
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
            inputs_equal=_inputs_equal(r, a, b_by_key, b_cut),
            rel_diff=rel_diff(r.norm, other.norm) if other is not None else None,
            norm_a=r.norm,
            norm_b=other.norm if other is not None else None,
            only_in="A" if other is None else None,
            around=_around(a, i, b_by_key, b_cut),
        )
    if a_cut:  # what run B has beyond run A's records, run A did not reach
        return None
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
    cut = _cut(steps_a, steps_b, both)
    if divergence_step in steps_a and divergence_step in steps_b:
        if cut:
            return None, (
                f"every tensor both runs recorded is equal up to step {divergence_step}, where "
                f"the curves part; {cut}: what it did not record is not compared"
            )
        return None, (
            f"every tensor mfp.watch recorded is equal up to step {divergence_step}, where the "
            "curves part: the difference arises outside the watched model"
        )
    watched = ", ".join(str(s) for s in both) or "none"
    return None, (
        f"step {divergence_step}, where the curves part, was not watched by both runs "
        f"(watched by both up to it: {watched}; every watched tensor is equal"
        f"{'; ' + cut if cut else ''}); "
        f"mfp.watch(model, steps=[{divergence_step}]) names the tensor where they part"
    )


def _cut(
    steps_a: dict[int, list[TensorRecord]], steps_b: dict[int, list[TensorRecord]], both: list[int]
) -> str | None:
    """'run B ended inside step 21 (it recorded forward only)', for each such step compared."""
    said = []
    for step in both:
        for label, records in (("A", steps_a[step]), ("B", steps_b[step])):
            if _partial(records):
                phases = ", ".join(dict.fromkeys(r.phase for r in records))
                said.append(f"run {label} ended inside step {step} (it recorded {phases} only)")
    return "; ".join(said) or None
