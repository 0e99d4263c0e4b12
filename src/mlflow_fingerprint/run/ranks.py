"""Distributed runs: every rank captures its own fingerprint, rank 0 gathers them and records one
MLflow run for the whole job.

Why one run: the ranks of a ``torchrun`` job are one training; N runs would make the UI and the
comparator see N trainings. Why gather every rank's fingerprint: an all-reduce is reproducible only
if every rank computes the same way, so a job whose ranks differ in GPU model, driver, torch or
numerics flags is flagged at start (``determinism_kb.md`` (a), "World size / GPU count" and
"NCCL_ALGO / NCCL_PROTO ...").

The gather runs over a gloo side group with its own timeout: a NCCL default group would need
CUDA tensors (and capture must never initialise CUDA), and a rank that died must not hang the
others for NCCL's default 10-30 minutes.
"""

from __future__ import annotations

import atexit
import os
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .. import layout
from ..errors import HeterogeneousJobWarning, warn
from ..model.fields import (
    DISTRIBUTED_BACKEND,
    DISTRIBUTED_DISTINCT,
    DISTRIBUTED_HETEROGENEOUS,
    DISTRIBUTED_HOSTNAME,
    DISTRIBUTED_LOCAL_RANK,
    DISTRIBUTED_RANK,
    DISTRIBUTED_WORLD_SIZE,
    GPU_DEVICES,
    GPU_DRIVER_VERSION,
    TORCH_VERSION,
)
from ..model.fingerprint import Fingerprint, get_path
from ..model.hashing import compute_hashes
from ..model.vocabulary import METRICS_MODES, MetricsMode
from ..settings import settings
from ..tracking import tags as tagging

ENV_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")

# Per-rank facts whose distinctness across ranks breaks the reproducibility of the all-reduce.
HETEROGENEITY: dict[str, str] = {
    "gpu_models": "GPU models",
    "drivers": "GPU drivers",
    "torch_versions": "torch versions",
    "numerics": "numerics flag sets",
}


def _dist() -> Any:
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return None
    dist = getattr(torch, "distributed", None)
    return dist if dist is not None and dist.is_available() else None


def launched_distributed() -> bool:
    """The process was started by torchrun (or alike) as one of several ranks."""
    try:
        return all(os.environ.get(k) for k in ENV_VARS[:3]) and int(os.environ["WORLD_SIZE"]) > 1
    except ValueError:
        return False


def ensure_process_group(initialise: bool = True) -> Any:
    """``torch.distributed`` with a process group, or None for a single-process run.

    The user's group is used as it is; one is initialised here only where torchrun's variables
    say this is a multi-rank job, nobody did it yet and ``initialise`` allows it (gloo on CPU,
    nccl where CUDA is usable). The trainer callbacks pass False: the trainer owns the group.
    """
    if not launched_distributed() and _dist() is None:
        return None
    try:
        import torch.distributed as dist
    except Exception:  # torch without distributed support
        return None
    if not dist.is_available():
        return None
    if dist.is_initialized():
        return dist if dist.get_world_size() > 1 else None
    if not initialise or not launched_distributed():
        return None
    import torch

    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend)
    atexit.register(_destroy_ours, dist)
    return dist


def _destroy_ours(dist: Any) -> None:
    """At exit, destroy the group initialised here if the program did not: left to the
    interpreter's teardown, gloo's threads abort the finished process (see ``_SIDE``)."""
    try:
        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # exiting anyway; the group may be half torn down by the user
        pass


@dataclass
class RankGroup:
    """This process's place in the job and the side group the fingerprints travel on."""

    dist: Any
    rank: int
    world_size: int
    group: Any

    @classmethod
    def current(cls, initialise: bool = True) -> RankGroup | None:
        dist = ensure_process_group(initialise)
        if dist is None:
            return None
        group = _side_group(dist)
        return cls(dist, dist.get_rank(), dist.get_world_size(), group)

    def gather(self, record: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        """Every rank's record on rank 0 (in rank order); None on the other ranks."""
        out: list[Any] | None = [None] * self.world_size if self.rank == 0 else None
        self.dist.gather_object(dict(record), out, dst=0, group=self.group)
        return out

    def broadcast(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank (the run id, so other ranks can log into it)."""
        box = [value]
        self.dist.broadcast_object_list(box, src=0, group=self.group)
        return box[0]

    def mean(self, values: Mapping[str, float]) -> dict[str, float]:
        """The mean over ranks of each value (every rank must call it with the same keys)."""
        import torch

        keys = sorted(values)
        tensor = torch.tensor([float(values[k]) for k in keys], dtype=torch.float64)
        self.dist.all_reduce(tensor, group=self.group)
        return {k: float(v) / self.world_size for k, v in zip(keys, tensor.tolist(), strict=True)}


# WORLD -> its side group, held only while WORLD lives: once the user's destroy_process_group()
# lets go of the groups, nothing here may keep one alive. A group left for the interpreter's
# teardown is freed after torch's C++ runtime is gone, where gloo's threads abort the process
# ("terminate called without an active exception"), failing a job that had finished.
_SIDE: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _side_group(dist: Any) -> Any:
    """A gloo group over all ranks (created once per process group, collectively), bounded by
    ``MLFLOW_FINGERPRINT_GATHER_TIMEOUT`` (120 s)."""
    world = dist.group.WORLD
    group = _SIDE.get(world)
    if group is None:
        group = _SIDE[world] = dist.new_group(
            backend="gloo", timeout=timedelta(seconds=settings().gather_timeout_s)
        )
        atexit.register(_destroy_side, dist, weakref.ref(world))
    return group


def _destroy_side(dist: Any, world: weakref.ref[Any]) -> None:
    """At exit, destroy the side group of a process group the program left initialised (a
    trainer's, which is not ours to destroy): it must not be left for the teardown either."""
    alive = world()
    group = _SIDE.pop(alive, None) if alive is not None else None
    if group is None:  # the program destroyed its groups, ours with them
        return
    try:
        if dist.is_initialized():
            dist.destroy_process_group(group)
    except Exception:  # exiting anyway
        pass


# -- what rank 0 makes of the gathered records ----------------------------------------------------


def _gpu_values(record: Mapping[str, Any], key: str = "name") -> str:
    """The distinct values of one GPU fact across the rank's devices, e.g. ``"9.0"``."""
    devices = get_path(record, GPU_DEVICES)
    if not isinstance(devices, list | tuple) or not devices:
        return "none"
    return ",".join(sorted({str(d.get(key)) for d in devices if isinstance(d, Mapping)}))


def rank_summary(record: Mapping[str, Any]) -> dict[str, Any]:
    """The facts of one rank kept in rank 0's fingerprint (``distributed.ranks``); the whole
    record is the artifact ``fingerprint/ranks/rank-<i>.json``."""
    hashes = record.get("hashes") or {}
    return {
        "rank": get_path(record, DISTRIBUTED_RANK),
        "local_rank": get_path(record, DISTRIBUTED_LOCAL_RANK),
        "hostname": get_path(record, DISTRIBUTED_HOSTNAME),
        "gpu": _gpu_values(record),
        # the comparator's same-architecture test, as for rank 0's gpu.devices
        "compute_capability": _gpu_values(record, "compute_capability"),
        "sm_count": _gpu_values(record, "sm_count"),
        "driver": get_path(record, GPU_DRIVER_VERSION),
        "torch": get_path(record, TORCH_VERSION),
        "backend": get_path(record, DISTRIBUTED_BACKEND),
        "hashes": {k: hashes.get(k) for k in ("env", "numerics", "recipe", "fingerprint")},
    }


def distinct(summaries: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many different values of each HETEROGENEITY fact the ranks have."""
    keys = {
        "gpu_models": lambda s: s.get("gpu"),
        "drivers": lambda s: s.get("driver"),
        "torch_versions": lambda s: s.get("torch"),
        "numerics": lambda s: (s.get("hashes") or {}).get("numerics"),
    }
    return {name: len({str(get(s)) for s in summaries}) for name, get in keys.items()}


def heterogeneity_message(counts: Mapping[str, int], world_size: int) -> str | None:
    """One sentence naming what differs across ranks; None for a homogeneous job."""
    differing = [f"{n} {HETEROGENEITY[k]}" for k, n in counts.items() if n > 1]
    if not differing:
        return None
    return (
        f"mlflow-fingerprint: the {world_size} ranks of this job differ ({', '.join(differing)}); "
        "ranks that compute differently make the all-reduce, and so the run, irreproducible"
    )


def merge(fp: Fingerprint, records: Sequence[Mapping[str, Any]]) -> Fingerprint:
    """Rank 0's fingerprint with every rank's summary in ``distributed.ranks`` and the
    heterogeneity counts in ``distributed.distinct`` (both volatile: hashes do not change)."""
    summaries = [rank_summary(r) for r in records]
    counts = distinct(summaries)
    record = fp.to_dict()
    section = dict(record.get("distributed") or {})
    section["ranks"] = summaries
    section["distinct"] = counts
    section["heterogeneous"] = any(n > 1 for n in counts.values())
    record["distributed"] = section
    hashes = compute_hashes(record)
    return Fingerprint.from_dict({**record, "hashes": hashes})


def gather_merged(
    group: RankGroup, fp: Fingerprint
) -> tuple[Fingerprint, list[dict[str, Any]]] | None:
    """Rank 0: ``fp`` merged with every rank's fingerprint, and those fingerprints in rank order
    (the ``rank-<i>.json`` artifacts); None on the other ranks. A collective: every rank of the
    job calls it at the same point, or the others wait for the side group's timeout."""
    records = group.gather(fp.to_dict())
    if records is None:
        return None
    return merge(fp, records), records


def job_tags(fp: Fingerprint) -> dict[str, str]:
    """``fingerprint.world_size`` and the ``fingerprint.distributed.*`` tags of a merged
    fingerprint (empty for a single-process one)."""
    record = fp.to_dict()
    world = get_path(record, DISTRIBUTED_WORLD_SIZE)
    if not isinstance(world, int) or world <= 1:
        return {}
    out = {
        layout.TAG_WORLD_SIZE: str(world),
        layout.TAG_DISTRIBUTED_BACKEND: str(get_path(record, DISTRIBUTED_BACKEND)),
    }
    counts = get_path(record, DISTRIBUTED_DISTINCT)
    if isinstance(counts, Mapping):
        for key, n in counts.items():
            out[layout.distinct_tag(key)] = str(n)
        heterogeneous = bool(get_path(record, DISTRIBUTED_HETEROGENEOUS))
        out[layout.TAG_DISTRIBUTED_HETEROGENEOUS] = str(heterogeneous).lower()
    return out


def rank_artifacts(
    records: Sequence[Mapping[str, Any]], secrets: set[str]
) -> list[tagging.Artifact]:
    """``fingerprint/ranks/rank-<i>.json`` for every rank's whole fingerprint."""
    from ..redact import redact_text

    items = []
    for i, record in enumerate(records):
        rank = get_path(record, DISTRIBUTED_RANK)
        name = layout.rank_file(rank if isinstance(rank, int) else i)
        text = Fingerprint.from_dict(record).to_json()

        def redacted(t: str = text) -> bytes:
            return redact_text(t, secrets, keywords=False).encode()

        items.append(tagging.artifact(layout.RANKS_DIR, name, redacted))
    return items


def warn_if_heterogeneous(fp: Fingerprint) -> None:
    counts = fp.get(DISTRIBUTED_DISTINCT)
    world = fp.get(DISTRIBUTED_WORLD_SIZE)
    message = heterogeneity_message(counts or {}, world or 0)
    if message:
        warn(message, HeterogeneousJobWarning)


def metric_mode(value: str) -> MetricsMode:
    if value not in METRICS_MODES:
        raise ValueError(f"metrics must be one of {', '.join(METRICS_MODES)}; got {value!r}")
    return value  # type: ignore[return-value]  # checked above


class RankMetrics:
    """What ``log_metrics`` does on a distributed rank, by mode: ``rank0`` keeps rank 0's values
    only; ``per_rank`` logs other ranks' values into rank 0's run as ``<name>/rank<i>``;
    ``mean`` logs the mean over ranks (a collective: every rank must log the same names)."""

    def __init__(self, ranks: RankGroup, mode: MetricsMode, writer: Any) -> None:
        self.ranks = ranks
        self.mode = mode
        self.writer = writer  # rank 0's run writer, or (per_rank) a writer into rank 0's run

    @property
    def run_id(self) -> str | None:
        """Rank 0's run: nesting checks compare it with the active run, as for a writer."""
        return self.writer.run_id if self.writer is not None else None

    def log_metrics(self, values: Mapping[str, Any], step: int | None = None) -> None:
        if self.mode == "mean":
            values = self.ranks.mean(values)
            if self.ranks.rank != 0:
                return
        elif self.ranks.rank != 0:
            if self.mode == "rank0" or self.writer is None:
                return
            values = {f"{k}/rank{self.ranks.rank}": v for k, v in values.items()}
        if self.writer is not None:
            self.writer.log_metrics(values, step)
