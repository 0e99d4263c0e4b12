"""Executors that run a rerun on a cluster node instead of here (docs/clusters.md): a Ray job
(``ray.py``) or a Slurm batch job (``slurm.py``), chosen by ``--executor`` (:func:`executor_for`).
Both place a job on a node of the machine kind it names (``prove/placement.py``), send it only the
allowlisted environment (``remote.py``), bound it in time and cancel it on the cluster when the
bisect or rerun is interrupted."""

from __future__ import annotations

from ...errors import UsageError
from ..process import Executor, LocalProcess

SPECS = "ray://HOST:PORT, ray+http://HOST:PORT (a dashboard), slurm or slurm:PARTITION"


def executor_for(spec: str | None) -> Executor:
    """The executor ``--executor SPEC`` names; the local process where none is given."""
    if spec is None or spec == "local":
        return LocalProcess()
    if spec.startswith(("ray://", "ray+http://", "ray+https://")):
        from .ray import RayJobs

        address = spec.removeprefix("ray+")
        return RayJobs(address)
    if spec == "slurm" or spec.startswith("slurm:"):
        from .slurm import SlurmJobs

        partition = spec.partition(":")[2] or None
        return SlurmJobs(partition)
    raise UsageError(f"--executor takes {SPECS}, not {spec!r}")
