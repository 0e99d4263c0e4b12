"""Switches that decide whether the same math runs through the same kernels every time."""

from __future__ import annotations

import sys
from typing import Any

from ..fingerprint import unavailable
from .context import ProbeContext
from .reading import env_values, read, torch_missing

DETERMINISM_ENV = (
    "CUBLAS_WORKSPACE_CONFIG",
    "CUDA_LAUNCH_BLOCKING",
    "MKL_CBWR",
    "ATEN_CPU_CAPABILITY",
    "TORCHINDUCTOR_DETERMINISTIC",
    "TORCHINDUCTOR_MAX_AUTOTUNE",
    "TORCHINDUCTOR_FALLBACK_RANDOM",
)


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


def probe(ctx: ProbeContext) -> dict[str, Any]:
    env = env_values(DETERMINISM_ENV)
    missing = torch_missing(ctx)
    if missing:
        return {"env": env, "torch": missing}
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
    }
