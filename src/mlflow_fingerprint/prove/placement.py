"""Machine kinds: what a rerun on a cluster must find in a node to stand for a recorded run.

A rerun here can set a seed or an option but never the GPU it runs on. On a cluster it can: a
node whose own capture shows the GPU model and count, the driver and its CUDA version a run
recorded (or no GPU, for a run that had none) computes as that run's machine did. That tuple is
a :class:`MachineKind`; its :meth:`~MachineKind.name` is the Ray custom resource and the Slurm
feature a node advertises (``python -m mlflow_fingerprint.prove.placement`` prints this node's),
so a rerun is placed on such a node by the engine's own scheduler, and a difference in it
becomes one knob of a bisect (``machine.kind``) where the cluster offers B's kind, and
``cannot_set`` with "no node of kind X" where it does not.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, TypeGuard

from ..compare.report import Difference
from ..compare.settable import Knob, Split
from ..model.fields import CUDA_COMPUTED_ON, GPU
from ..model.vocabulary import Effect
from .launch import Job
from .process import Finished

Device = Literal["cpu", "gpu"]
# What a node advertises: a Ray custom resource and a Slurm feature of this prefix.
PREFIX = "mfp_"
# The record's fields a machine kind settles: a rerun on a node of B's kind takes them all.
COVERED = (GPU.prefix, CUDA_COMPUTED_ON)
KIND_FIELD = "machine.kind"
_UNSAFE = re.compile(r"[^A-Za-z0-9]+")


@dataclass(frozen=True)
class MachineKind:
    """The hardware a run computed on, as far as a node can be chosen for it."""

    device: Device
    gpus: tuple[str, ...] = ()  # model names, one per device
    driver: str | None = None
    cuda: str | None = None  # the driver's CUDA version

    @property
    def name(self) -> str:
        """The resource/feature name: letters, digits and underscores only (Slurm features)."""
        if self.device == "cpu":
            return PREFIX + "cpu"
        models = sorted(set(self.gpus))
        parts = [f"{_slug(m)}_x{self.gpus.count(m)}" for m in models]
        parts += [f"driver_{_slug(self.driver or 'unknown')}", f"cuda_{_slug(self.cuda or 'na')}"]
        return PREFIX + "gpu_" + "_".join(parts)

    def label(self) -> str:
        if self.device == "cpu":
            return "CPU only"
        models = ", ".join(f"{self.gpus.count(m)}x {m}" for m in sorted(set(self.gpus)))
        return f"{models}, driver {self.driver or 'unknown'}, CUDA {self.cuda or 'n/a'}"


def _slug(text: str) -> str:
    return _UNSAFE.sub("_", text).strip("_")


def kind_of(record: Mapping[str, Any]) -> MachineKind:
    """The machine kind a record shows: its GPUs as NVML listed them, else CPU only."""
    gpu = record.get("gpu")
    if not isinstance(gpu, Mapping):
        return MachineKind("cpu")
    devices = gpu.get("devices")
    if not isinstance(devices, list) or not devices:
        return MachineKind("cpu")
    names = tuple(str(d.get("name", "unknown")) for d in devices if isinstance(d, Mapping))
    driver, cuda = gpu.get("driver_version"), gpu.get("cuda_driver_version")
    return MachineKind(
        "gpu",
        names,
        driver if isinstance(driver, str) else None,
        cuda if isinstance(cuda, str) else None,
    )


def kind_here() -> MachineKind:
    """This machine's kind, from the same capture a training records."""
    from ..capture import capture

    return kind_of(capture().to_dict())


class Cluster(Protocol):
    """An executor that places each job on a node of the kind the job names (``Job.kind``)."""

    def kinds(self) -> tuple[str, ...]:
        """The machine kinds (:attr:`MachineKind.name`) the cluster's nodes offer."""
        ...

    def execute(self, job: Job) -> Finished: ...


def is_cluster(executor: object) -> TypeGuard[Cluster]:
    return callable(getattr(executor, "kinds", None))


def home_of(record: Mapping[str, Any], offered: tuple[str, ...]) -> MachineKind:
    """The kind a rerun of the run ``record`` must run on; :class:`NoNode` where none offers it."""
    kind = kind_of(record)
    if kind.name not in offered:
        raise NoNode(kind, "the run")
    return kind


def covered(field: str) -> bool:
    return field.startswith(COVERED)


@dataclass(frozen=True)
class Placement:
    """Where a bisect's reruns go: A's kind by default, B's where the ``machine.kind`` knob is
    set; the sides with that knob added (or the reason it cannot be)."""

    home: str
    sides: Split
    offered: tuple[str, ...]
    notes: tuple[str, ...] = ()


def offered_line(offered: tuple[str, ...]) -> str:
    shown = ", ".join(offered) if offered else "none"
    return f"the cluster's nodes offer the machine kinds: {shown}"


def placement(
    a: Mapping[str, Any], b: Mapping[str, Any], sides: Split, offered: tuple[str, ...]
) -> Placement:
    """The placement of a bisect of A (record ``a``) against B (``b``) on a cluster offering
    ``offered``. A's kind must be offered (else :class:`NoNode`); where B's kind differs and is
    offered, the hardware differences become one knob, else they stay not settable and say
    which node is missing."""
    kind_a, kind_b = kind_of(a), kind_of(b)
    if kind_a.name not in offered:
        raise NoNode(kind_a, "A")
    # Every hardware difference, those the rules deem harmless too: a training that computed on
    # the CPU of a GPU node still ran on that node, with its drivers and its site's defaults,
    # which no record holds. Only a rerun there tells.
    hardware = [d for d in (*sides.cannot_set, *sides.no_effect) if covered(d.field)]
    if kind_a == kind_b or not hardware:
        return Placement(kind_a.name, sides, offered)
    if kind_b.name not in offered:
        note = f"{KIND_FIELD}: no node of kind {kind_b.name} ({kind_b.label()}), B's"
        cannot = (*sides.cannot_set, _kind_difference(kind_a, kind_b, hardware))
        return Placement(kind_a.name, replace(sides, cannot_set=cannot), offered, (note,))
    knob = Knob(
        "machine", kind_b.name, KIND_FIELD, kind_a.label(), kind_b.label(), _effect(hardware)
    )
    sides = replace(
        sides,
        knobs=(*sides.knobs, knob),
        cannot_set=tuple(d for d in sides.cannot_set if not covered(d.field)),
        no_effect=tuple(d for d in sides.no_effect if not covered(d.field)),
    )
    return Placement(kind_a.name, sides, offered)


def _effect(hardware: list[Difference]) -> Effect:
    """What another machine kind can do: the gravest of its differences' effects, and at least
    ``numerics`` (another node computes with its own drivers and defaults)."""
    found = [d.effect for d in hardware if d.effect != "none"]
    return "numerics" if not found or "numerics" in found else found[0]


def _kind_difference(a: MachineKind, b: MachineKind, like: list[Difference]) -> Difference:
    return replace(like[0], field=KIND_FIELD, a=a.label(), b=b.label(), effect=_effect(like))


class NoNode(Exception):
    """No node of the cluster is of the kind a rerun must run on."""

    def __init__(self, kind: MachineKind, side: str) -> None:
        super().__init__(
            f"no node of kind {kind.name} ({kind.label()}), {side}'s: a rerun elsewhere cannot "
            f"stand for {side}"
        )
        self.kind = kind


def main(argv: list[str]) -> int:
    """Print this node's kind for ``ray start --resources`` (``--ray``) or a Slurm node's
    ``Features=`` (``--slurm``); with no flag, its name and what it means."""
    kind = kind_here()
    if "--ray" in argv:
        print(json.dumps({kind.name: 1}))
    elif "--slurm" in argv:
        print(kind.name)
    else:
        print(f"{kind.name}\t{kind.label()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
