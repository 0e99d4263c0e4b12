"""Process-group facts: world size and backend change the global batch and the reduction order."""

from __future__ import annotations

import os
import socket
from typing import Any

from ..model.variables import DISTRIBUTED_ENV
from .context import ProbeContext
from .reading import env_values, safe


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value is not None and value.strip().lstrip("-").isdigit() else None


def probe(ctx: ProbeContext) -> dict[str, Any]:
    torch = ctx.torch
    dist = getattr(torch, "distributed", None) if torch is not None else None
    initialized = bool(
        dist is not None and safe(dist.is_available) is True and safe(dist.is_initialized) is True
    )
    if initialized and dist is not None:  # initialized implies dist; mypy narrows on the latter
        backend = safe(lambda: str(dist.get_backend()))
        world_size = safe(dist.get_world_size)
        rank = safe(dist.get_rank)
    else:
        backend = None
        world_size = _env_int("WORLD_SIZE") or 1
        rank = _env_int("RANK") or 0
    return {
        "initialized": initialized,
        "backend": backend,
        "world_size": world_size,
        "rank": rank,
        "local_rank": _env_int("LOCAL_RANK") or 0,
        "hostname": socket.gethostname(),
        "env": env_values(DISTRIBUTED_ENV),
    }
