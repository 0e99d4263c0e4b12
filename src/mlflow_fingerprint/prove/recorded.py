"""A recorded run as a rerun reads it: its record, metrics and recipe, how long it took, and
whether this machine can compute as the one it ran on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import layout
from ..compare.fields import field_changes
from ..compare.ranking import rank
from ..compare.report import Difference
from ..compare.resolve import Resolved, resolve
from ..compare.settable import knob_for
from ..errors import UsageError
from ..model.fields import (
    CUDA,
    GPU_DEVICES,
    GPU_DRIVER_VERSION,
    PACKAGES_DIGEST,
    PLATFORM_CPU_ISA_FLAGS,
    PLATFORM_CPU_MODEL,
    PYTHON_IMPLEMENTATION,
    PYTHON_VERSION,
    TORCH_BUILD,
    TORCH_CPU_CAPABILITY,
    TORCH_GIT_VERSION,
    TORCH_VERSION,
)
from ..tracking import store as tracking
from .recipe import Recipe, recipe_of

# What says whether this machine can compute as the run's did, read in this process before any
# rerun: the hardware, its driver and libraries, the interpreter and the installed packages.
MACHINE = (
    GPU_DEVICES,
    GPU_DRIVER_VERSION,
    CUDA.prefix,
    TORCH_VERSION,
    TORCH_GIT_VERSION,
    TORCH_BUILD,
    TORCH_CPU_CAPABILITY,
    PYTHON_VERSION,
    PYTHON_IMPLEMENTATION,
    PLATFORM_CPU_MODEL,
    PLATFORM_CPU_ISA_FLAGS,
    PACKAGES_DIGEST,
)


@dataclass(frozen=True)
class Recorded:
    """A run a rerun repeats or aims at: its record, metrics, recipe and wall time."""

    resolved: Resolved
    recipe: Recipe
    wall_s: float | None  # from its start to its end, where both are known

    @property
    def run_id(self) -> str:
        return str(self.resolved.ref.run_id)

    @property
    def record(self) -> Mapping[str, Any]:
        return self.resolved.record

    @property
    def uri(self) -> str:
        return str(self.resolved.tracking_uri)


def recorded(ref: str, tracking_uri: str | None, experiment: str | None, label: str) -> Recorded:
    """The run ``ref`` names, read for a rerun: a UsageError where it cannot be rerun."""
    resolved = resolve(ref, tracking_uri=tracking_uri, experiment=experiment, label=label)
    if not resolved.is_run or resolved.partial:
        raise UsageError(f"{ref} is not an MLflow run with a stored fingerprint: nothing to rerun")
    uri = str(resolved.tracking_uri)
    run_id = str(resolved.ref.run_id)
    with tracking.store_errors(uri):
        mlflow_client = tracking.client(uri)
        raw = tracking.read_artifact(mlflow_client, run_id, layout.GIT_DIFF_ARTIFACT)
        info = mlflow_client.get_run(run_id).info
    diff = raw.decode(errors="replace") if raw is not None else None
    start, end = info.start_time, info.end_time
    wall = (end - start) / 1000 if start and end and end >= start else None
    return Recorded(resolved, recipe_of(run_id, resolved.record, diff), wall)


def fingerprint_of(run_id: str, uri: str) -> Mapping[str, Any]:
    """A rerun's own record, as stored."""
    return resolve(run_id, tracking_uri=uri, label="rerun").record


def differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[Difference, ...]:
    return rank(field_changes(a, b), a, b)


def machine_gaps(record: Mapping[str, Any]) -> tuple[Difference, ...]:
    """How this machine differs from the one ``record`` was made on, in what no rerun can set."""
    from ..capture import capture

    here = capture().to_dict()
    return tuple(
        d
        for d in differences(record, here)
        if d.effect != "none" and d.field.startswith(MACHINE) and knob_for(d) is None
    )
