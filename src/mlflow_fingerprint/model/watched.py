"""One watched tensor at one training step: a line of ``fingerprint/numerics/steps.jsonl``.

Written by ``mfp.watch`` (``run/watch.py``) and read by the comparator (``compare/where.py``);
the shape of a line is spelled here once. Lines are in execution order within a step, so the
first line two runs disagree on is the first tensor that differs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .vocabulary import PHASES, Phase, check

INPUT = "input"  # a module's first input (forward phase)
OUTPUT = "output"  # a module's output; "output.<i>" for the i-th tensor of a tuple or dict


@dataclass(frozen=True, slots=True)
class TensorRecord:
    """A tensor's exact digest and norm, and where in the step it was taken.

    ``module`` is the module's path in the model (``""`` for the model itself), ``kind`` its class
    name; ``tensor`` is ``input``, ``output`` (``output.<i>``) or, for a gradient or a parameter,
    the parameter's name inside its module (``weight``). ``call`` counts the module's forward
    calls (or a gradient's accumulations) within the step, from 0. ``partial``: the run ended
    inside this record's step (after its forward pass, say, before its update), so the step's
    later tensors were never recorded; their absence says nothing about the other run."""

    step: int
    phase: Phase
    module: str
    kind: str
    tensor: str
    call: int
    dtype: str
    shape: tuple[int, ...]
    digest: str
    norm: float
    partial: bool = False

    def __post_init__(self) -> None:
        check(self.phase, PHASES, "phase")

    @property
    def key(self) -> tuple[int, str, str, str, int]:
        """What a record of the other run is matched on."""
        return (self.step, self.phase, self.module, self.tensor, self.call)

    @property
    def name(self) -> str:
        """``features.3.weight``, ``features.3 output``: the tensor as a person names it."""
        where = self.module or "(model)"
        if self.phase == "forward":
            return f"{where} {self.tensor}" + (f" (call {self.call})" if self.call else "")
        return f"{self.module}.{self.tensor}" if self.module else self.tensor

    def same_tensor(self, other: TensorRecord) -> bool:
        """Bit for bit the same values (the same dtype, shape and digest)."""
        return (self.dtype, self.shape, self.digest) == (other.dtype, other.shape, other.digest)

    def to_dict(self) -> dict[str, Any]:
        line = {
            "step": self.step,
            "phase": self.phase,
            "module": self.module,
            "type": self.kind,
            "tensor": self.tensor,
            "call": self.call,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "digest": self.digest,
            "norm": self.norm,
        }
        if self.partial:  # only then: the lines of every completed step stay as they were
            line["partial"] = True
        return line


def from_dict(line: Mapping[str, Any]) -> TensorRecord:
    return TensorRecord(
        step=int(line["step"]),
        phase=line["phase"],
        module=str(line["module"]),
        kind=str(line["type"]),
        tensor=str(line["tensor"]),
        call=int(line.get("call", 0)),
        dtype=str(line["dtype"]),
        shape=tuple(int(n) for n in line["shape"]),
        digest=str(line["digest"]),
        norm=float(line["norm"]) if line.get("norm") is not None else float("nan"),
        partial=line.get("partial") is True,
    )


def encode(records: Iterable[TensorRecord]) -> bytes:
    return b"".join(json.dumps(r.to_dict()).encode() + b"\n" for r in records)


def decode(data: bytes) -> tuple[TensorRecord, ...]:
    """The records of a ``steps.jsonl``; a ValueError names the first line that is not one."""
    out = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(from_dict(json.loads(line)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"line {number} is not a watched tensor ({exc})") from None
    return tuple(out)
