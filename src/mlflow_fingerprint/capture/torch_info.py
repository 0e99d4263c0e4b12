"""The torch build: version, build configuration, CPU kernel ISA and thread counts."""

from __future__ import annotations

import re
from typing import Any

from ..model.variables import THREAD_ENV
from .context import ProbeContext
from .reading import env_values, read, safe, torch_missing

_BUILD_KEYS = (
    "BLAS_INFO",
    "LAPACK_INFO",
    "USE_MKL",
    "USE_MKLDNN",
    "USE_OPENMP",
    "USE_CUDA",
    "USE_CUDNN",
    "USE_NCCL",
    "USE_ROCM",
    "BUILD_TYPE",
    "COMMIT_SHA",
)


def parse_build_config(text: str) -> dict[str, Any]:
    """The reproducibility-relevant parts of ``torch.__config__.show()``."""
    settings = dict(re.findall(r"\b([A-Z_]+)=([^,\s]*)", text))
    build = {key.lower(): settings.get(key) for key in _BUILD_KEYS}
    mkl = re.search(r"Math Kernel Library Version ([\w.\-]+)", text)
    onednn = re.search(r"MKL-DNN v([\d.]+)", text)
    compiler = re.search(r"^\s*- (GCC [\d.]+|clang [\d.]+|MSVC [\d.]+)", text, re.M)
    build["mkl_version"] = mkl.group(1) if mkl else None
    build["onednn_version"] = onednn.group(1) if onednn else None
    build["compiler"] = compiler.group(1) if compiler else None
    return build


def probe(ctx: ProbeContext) -> dict[str, Any]:
    missing = torch_missing(ctx)
    if missing:
        return missing
    torch = ctx.torch
    return {
        "version": str(torch.__version__),
        "git_version": read(torch, "version.git_version"),
        "debug": read(torch, "version.debug"),
        "hip": read(torch, "version.hip"),
        "build": safe(lambda: parse_build_config(torch.__config__.show())),
        "cpu_capability": read(torch, "backends.cpu.get_cpu_capability", call=True),
        "threads": {
            "intra_op": read(torch, "get_num_threads", call=True),
            "inter_op": read(torch, "get_num_interop_threads", call=True),
            "env": env_values(THREAD_ENV),
        },
    }
