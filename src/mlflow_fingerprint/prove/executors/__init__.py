"""Executors that run a rerun on a cluster node instead of here (docs/clusters.md): a Ray job
(``ray.py``) or a Slurm batch job (``slurm.py``), chosen by ``--executor`` (:func:`executor_for`).
Both place a job on a node of the machine kind it names (``prove/placement.py``), send it only the
allowlisted environment (``remote.py``), bound it in time, cancel it on the cluster when the
bisect or rerun is interrupted, and hold as many jobs at once as the cluster has nodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...errors import UsageError
from ..process import Executor, LocalProcess

SPECS = "ray://HOST:PORT, ray+http://HOST:PORT (a dashboard), slurm or slurm:PARTITION"
Engine = Literal["local", "ray", "slurm"]


@dataclass(frozen=True)
class ExecutorSpec:
    """What ``--executor`` names: the engine, and Ray's address or Slurm's partition."""

    engine: Engine
    where: str | None = None

    @staticmethod
    def parse(spec: str | None) -> ExecutorSpec:
        """``spec`` read, without reaching any cluster; one line where it names none."""
        if spec is None or spec == "local":
            return ExecutorSpec("local")
        if spec.startswith(("ray://", "ray+http://", "ray+https://")):
            return ExecutorSpec("ray", spec.removeprefix("ray+"))
        if spec == "slurm" or spec.startswith("slurm:"):
            return ExecutorSpec("slurm", spec.partition(":")[2] or None)
        raise UsageError(f"--executor takes {SPECS}, not {spec!r}")

    def executor(self) -> Executor:
        """The executor, asked for its nodes (how many jobs it holds at once)."""
        if self.engine == "ray":
            from .ray import RayJobs

            return RayJobs.on(str(self.where))
        if self.engine == "slurm":
            from .slurm import SlurmJobs

            return SlurmJobs.on(self.where)
        return LocalProcess()


def executor_for(spec: str | None) -> Executor:
    """The executor ``--executor SPEC`` names; the local process where none is given."""
    return ExecutorSpec.parse(spec).executor()
