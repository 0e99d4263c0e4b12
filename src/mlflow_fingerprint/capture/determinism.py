"""Switches that decide whether the same math runs through the same kernels every time."""

from __future__ import annotations

import sys
from typing import Any

from ..model.fingerprint import unavailable
from ..model.variables import DETERMINISM_ENV
from .context import DeterminismRequest, ProbeContext
from .reading import env_values, read, torch_missing


def _deterministic_algorithms(torch: Any) -> Any:
    """1.8+ ``are_deterministic_algorithms_enabled``; 1.7 called it ``is_deterministic``."""
    if hasattr(torch, "are_deterministic_algorithms_enabled"):
        return read(torch, "are_deterministic_algorithms_enabled", call=True)
    return read(torch, "is_deterministic", call=True)


def _inductor(torch: Any) -> Any:
    """Read only if the user's program already imported inductor: importing it costs seconds."""
    config = sys.modules.get("torch._inductor.config")
    if config is None:
        return unavailable("torch._inductor not imported by this process")
    return {
        "deterministic": getattr(config, "deterministic", None),
        "fallback_random": getattr(config, "fallback_random", None),
        "max_autotune": getattr(config, "max_autotune", None),
        "coordinate_descent_tuning": getattr(config, "coordinate_descent_tuning", None),
    }


def requested(request: DeterminismRequest | None) -> dict[str, Any] | None:
    """``determinism.requested``: the decision behind the flags, None where no run wrapper or
    trainer integration recorded one (a plain ``capture()``, a bare ``mlflow.start_run()``).

    Kept out of every hash (``hashing.VOLATILE``): the flags it set are hashed as themselves, and
    two runs with equal flags compute alike whoever set them.
    """
    if request is None:
        return None
    applied = list(request.applied) if request.applied is not None else None
    return {"mode": request.mode, "by": request.by, "applied": applied}


def probe(ctx: ProbeContext) -> dict[str, Any]:
    env = env_values(DETERMINISM_ENV)
    missing = torch_missing(ctx)
    if missing:
        return {"env": env, "torch": missing, "requested": requested(ctx.run.deterministic)}
    torch = ctx.torch
    return {
        "cudnn_enabled": read(torch, "backends.cudnn.enabled"),
        "cudnn_benchmark": read(torch, "backends.cudnn.benchmark"),
        "cudnn_deterministic": read(torch, "backends.cudnn.deterministic"),
        "cudnn_benchmark_limit": read(torch, "backends.cudnn.benchmark_limit"),
        "deterministic_algorithms": _deterministic_algorithms(torch),
        "warn_only": read(torch, "is_deterministic_algorithms_warn_only_enabled", call=True),
        "fill_uninitialized_memory": read(torch, "utils.deterministic.fill_uninitialized_memory"),
        "mkldnn_deterministic": read(torch, "backends.mkldnn.deterministic"),
        "inductor": _inductor(torch),
        "env": env,
        "requested": requested(ctx.run.deterministic),
    }
