"""Stable hashes of a fingerprint, computed on a canonical JSON form.

Three groups answer three questions a user asks of two runs: did the machine and software stack
change (``env``), did anything that changes arithmetic change (``numerics``), did the training
procedure or its random streams change (``recipe``). Volatile fields (time, pid, host, paths,
RNG states read at an arbitrary moment) are in none of them, so two captures of one process and
two identical jobs on twin machines hash the same.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from .fingerprint import get_path

HASH_LENGTH = 16

# Which top-level sections (or dotted sub-fields) feed each hash group.
GROUPS: dict[str, tuple[str, ...]] = {
    "env": ("gpu", "cuda", "torch", "python", "platform", "packages.digest", "distributed.env"),
    "numerics": ("numerics", "determinism", "torch.threads"),
    "recipe": ("seeds", "data", "git", "distributed.world_size", "distributed.backend"),
}

# Fields hashed in another group: thread counts change reduction order, so they are numerics.
EXCLUDED: dict[str, tuple[tuple[str, ...], ...]] = {"env": (("torch", "threads"),)}

# Fields that never enter a hash. Prefix match on dotted paths, ``*`` matches one list index.
VOLATILE: tuple[str, ...] = (
    "gpu.devices.*.uuid_digest",
    "gpu.devices.*.index",
    "gpu.devices.*.memory_used_mib",
    "gpu.source",
    "python.executable",
    "python.prefix",
    "platform.hostname",
    "platform.pid",
    "platform.memory_available_mib",
    "platform.boot_id",
    "seeds.state_digests",
    "seeds.captured_at_stage",
    "data.captured_at_stage",
    "git.root",
    "git.branch",
    "git.remote_url",
    "git.untracked_count",
    "git.untracked_files",
    "git.diff_lines",
    "git.commit_time",
    "distributed.rank",
    "distributed.local_rank",
    "distributed.ranks",
    "distributed.hostname",
)


def canonical_json(value: Any) -> str:
    """Key-sorted, whitespace-free, ASCII JSON: the same value always gives the same bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


def digest(value: Any, length: int = HASH_LENGTH) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:length]


def _is_excluded(path: tuple[str, ...], patterns: tuple[tuple[str, ...], ...]) -> bool:
    return any(
        len(path) == len(p) and all(a == "*" or a == b for a, b in zip(p, path, strict=True))
        for p in patterns
    )


_VOLATILE_PATTERNS = tuple(tuple(p.split(".")) for p in VOLATILE)


def strip_volatile(
    value: Any, path: tuple[str, ...] = (), extra: tuple[tuple[str, ...], ...] = ()
) -> Any:
    """A copy of ``value`` (found at ``path`` in the record) without VOLATILE or ``extra`` fields."""
    patterns = _VOLATILE_PATTERNS + extra
    if isinstance(value, Mapping):
        return {
            k: strip_volatile(v, (*path, str(k)), extra)
            for k, v in value.items()
            if not _is_excluded((*path, str(k)), patterns)
        }
    if isinstance(value, list | tuple):
        return [strip_volatile(v, (*path, str(i)), extra) for i, v in enumerate(value)]
    return value


def group_payload(record: Mapping[str, Any], group: str) -> dict[str, Any]:
    """What goes into one hash group: the group's fields with volatile ones removed."""
    return {
        name: strip_volatile(get_path(record, name), tuple(name.split(".")), EXCLUDED.get(group, ()))
        for name in GROUPS[group]
    }


def compute_hashes(record: Mapping[str, Any]) -> dict[str, str]:
    """``env``, ``numerics``, ``recipe`` and the overall ``fingerprint`` hash of a record."""
    hashes = {group: digest(group_payload(record, group)) for group in GROUPS}
    hashes["fingerprint"] = digest([hashes["env"], hashes["numerics"], hashes["recipe"]])
    return hashes
