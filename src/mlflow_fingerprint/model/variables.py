"""The environment variables a record holds, and the only ones a rerun may set.

A record lists a few variables by name (``determinism.env``, ``numerics.env``,
``torch.threads.env``): those that change how the same math is computed. A rerun that takes one
of B's values sets it in the training's environment, so the names a rerun may set are a fixed
list, never whatever a record holds: a record is input, and a crafted or damaged one naming
``PYTHONPATH``, ``LD_PRELOAD`` or ``PYTHONSTARTUP`` would otherwise run code of its choosing in
the rerun (docs/design.md, "What a rerun may touch"). A variable outside the list is reported as
what a rerun cannot set.
"""

from __future__ import annotations

import re

# Read by torch, cuBLAS, oneMKL and inductor: which kernels run, in which order.
DETERMINISM_ENV = (
    "CUBLAS_WORKSPACE_CONFIG",
    "CUDA_LAUNCH_BLOCKING",
    "MKL_CBWR",
    "ATEN_CPU_CAPABILITY",
    "TORCHINDUCTOR_DETERMINISTIC",
    "TORCHINDUCTOR_MAX_AUTOTUNE",
    "TORCHINDUCTOR_FALLBACK_RANDOM",
)
# Read by the CUDA libraries and torch: the precision of fp32 matmuls.
NUMERICS_ENV = (
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "TORCH_BLAS_PREFER_CUBLASLT",  # the initial value of preferred_blas_library
)
# Read once, when the thread pools start: a rerun sets them before the process starts.
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")

# Every variable a rerun may set: the recorded ones, the hash seed and the other thread pools,
# TensorFlow's determinism switches. None of them names a file, a library or code to load.
RERUN_ENV: frozenset[str] = frozenset(
    {
        *DETERMINISM_ENV,
        *NUMERICS_ENV,
        *THREAD_ENV,
        "PYTHONHASHSEED",
        "OPENBLAS_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "TF_DETERMINISTIC_OPS",
        "TF_CUDNN_DETERMINISTIC",
        "TF_ENABLE_ONEDNN_OPTS",
        "TF_INTRA_OP_PARALLELISM_THREADS",
        "TF_INTER_OP_PARALLELISM_THREADS",
    }
)

# The record's fields that hold a variable's value, with the variable's name as the last part.
ENV_FIELD = re.compile(r"^(?:determinism\.env|numerics\.env|torch\.threads\.env)\.(?P<name>[^.]+)$")

# A value a rerun may put in an environment: printable, one line, short.
MAX_VALUE_CHARS = 256
_VALUE = re.compile(r"[\x20-\x7e]*")


def rerun_may_set(name: str) -> bool:
    """Whether a rerun may set the variable ``name`` (the allowlist, exactly as spelled)."""
    return name in RERUN_ENV


def env_field_name(field: str) -> str | None:
    """The variable a record's field holds (``torch.threads.env.OMP_NUM_THREADS`` ->
    ``OMP_NUM_THREADS``); None for a field that is not one."""
    m = ENV_FIELD.match(field)
    return m["name"] if m else None


def settable_value(value: object) -> bool:
    """Whether ``value`` may go into a rerun's environment: None (unset it) or a short line of
    printable ASCII (no NUL, no newline: a record is input)."""
    if value is None:
        return True
    return (
        isinstance(value, str) and len(value) <= MAX_VALUE_CHARS and bool(_VALUE.fullmatch(value))
    )
