"""Flags that change arithmetic (TF32, reduced-precision reductions, SDPA backends), normalised.

torch has two spellings for TF32: the legacy booleans (``allow_tf32``, 1.7+) and the
``fp32_precision`` strings (2.9+), where ``"none"`` defers to the parent node and a fully deferred
chain means IEEE. We record the *resolved* precision per backend, so ``allow_tf32=False``,
``set_float32_matmul_precision("highest")`` and an untouched default all compare equal; the raw
reads are kept under ``raw`` for a human and left out of the hashes.
"""

from __future__ import annotations

import functools
from typing import Any

from ..model.fingerprint import is_unavailable, unavailable
from ..model.precision import normalise_precision
from ..model.variables import NUMERICS_ENV
from .context import ProbeContext
from .reading import _MISSING, attr, env_values, read, safe, torch_missing

# backend node -> chain of fp32_precision attributes, most specific first.
PRECISION_CHAINS: dict[str, tuple[str, ...]] = {
    "cuda_matmul": ("backends.cuda.matmul", "backends"),
    "cudnn_conv": ("backends.cudnn.conv", "backends.cudnn", "backends"),
    "cudnn_rnn": ("backends.cudnn.rnn", "backends.cudnn", "backends"),
    "mkldnn_matmul": ("backends.mkldnn.matmul", "backends.mkldnn", "backends"),
    "mkldnn_conv": ("backends.mkldnn.conv", "backends.mkldnn", "backends"),
    "mkldnn_rnn": ("backends.mkldnn.rnn", "backends.mkldnn", "backends"),
}

# Legacy (pre-2.9) equivalents: a boolean that means tf32 when True.
LEGACY_TF32: dict[str, str] = {
    "cuda_matmul": "backends.cuda.matmul.allow_tf32",
    "cudnn_conv": "backends.cudnn.allow_tf32",
    "cudnn_rnn": "backends.cudnn.allow_tf32",
    "mkldnn_matmul": "backends.mkldnn.allow_tf32",
    "mkldnn_conv": "backends.mkldnn.allow_tf32",
    "mkldnn_rnn": "backends.mkldnn.allow_tf32",
}


def resolve_precision(torch: Any, node: str) -> Any:
    """Walk the fp32_precision chain (2.9+) or fall back to the legacy boolean."""
    chain = PRECISION_CHAINS[node]
    if attr(torch, f"{chain[0]}.fp32_precision") is _MISSING:
        legacy = attr(torch, LEGACY_TF32[node])
        if legacy is _MISSING:
            # torch < 1.7 (or no oneDNN TF32 knob): these backends compute in IEEE fp32.
            return "ieee"
        return normalise_precision(legacy)
    for path in chain:
        value = read(torch, f"{path}.fp32_precision")
        if is_unavailable(value):
            return value
        if value != "none":
            return normalise_precision(value)
    return "ieee"


def blas_library(torch: Any) -> Any:
    """The BLAS library torch prefers for CUDA matrix products (``cublas``, ``cublaslt``; ``ck``
    on ROCm), torch 2.3+. The two pick different kernels for the same product, so a switch moves
    the numbers (pytorch/torchtitan#2474). Reading it does not initialise CUDA."""
    if attr(torch, "backends.cuda.preferred_blas_library") is _MISSING:
        return unavailable("torch.backends.cuda.preferred_blas_library: torch older than 2.3")
    backend = read(torch, "backends.cuda.preferred_blas_library", call=True)
    if is_unavailable(backend):
        return backend
    return str(getattr(backend, "name", backend)).lower()


def _raw(torch: Any) -> dict[str, Any]:
    """Every spelling as read, for people; reads that raise on mixed API use are recorded so."""
    raw: dict[str, Any] = {
        "matmul_allow_tf32": read(torch, "backends.cuda.matmul.allow_tf32"),
        "cudnn_allow_tf32": read(torch, "backends.cudnn.allow_tf32"),
        "float32_matmul_precision": read(torch, "get_float32_matmul_precision", call=True),
    }
    for node, chain in PRECISION_CHAINS.items():
        if attr(torch, f"{chain[0]}.fp32_precision") is not _MISSING:
            raw[f"{node}_fp32_precision"] = read(torch, f"{chain[0]}.fp32_precision")
    raw["generic_fp32_precision"] = read(torch, "backends.fp32_precision")
    return raw


def probe(ctx: ProbeContext) -> dict[str, Any]:
    env = env_values(NUMERICS_ENV)
    missing = torch_missing(ctx)
    if missing:
        # The variables are NVIDIA's and torch's, read from the environment: kept where torch is
        # not read (a TensorFlow program), whose cuBLAS and cuDNN honour NVIDIA_TF32_OVERRIDE too.
        return {"env": env, "torch": missing}
    torch = ctx.torch
    m = "backends.cuda.matmul"
    return {
        "fp32_precision": {
            node: safe(functools.partial(resolve_precision, torch, node))
            for node in PRECISION_CHAINS
        },
        "reduced_precision_reduction": {
            "fp16": read(torch, f"{m}.allow_fp16_reduced_precision_reduction"),
            "bf16": read(torch, f"{m}.allow_bf16_reduced_precision_reduction"),
            "fp16_split_k": read(torch, f"{m}.allow_fp16_reduced_precision_reduction_split_k"),
            "bf16_split_k": read(torch, f"{m}.allow_bf16_reduced_precision_reduction_split_k"),
        },
        "fp16_accumulation": read(torch, f"{m}.allow_fp16_accumulation"),
        "blas_library": safe(lambda: blas_library(torch)),
        "sdpa": {
            "flash": read(torch, "backends.cuda.flash_sdp_enabled", call=True),
            "mem_efficient": read(torch, "backends.cuda.mem_efficient_sdp_enabled", call=True),
            "math": read(torch, "backends.cuda.math_sdp_enabled", call=True),
            "cudnn": read(torch, "backends.cuda.cudnn_sdp_enabled", call=True),
            "math_fp16_bf16_reduction": read(
                torch, "backends.cuda.fp16_bf16_reduction_math_sdp_allowed", call=True
            ),
        },
        "env": env,
        "raw": _raw(torch),
    }
