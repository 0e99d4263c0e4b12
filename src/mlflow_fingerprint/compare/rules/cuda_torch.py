"""The torch build and the CUDA libraries it ships with: versions, threads, CPU kernels.

Kernels ship inside the torch wheel (cuBLAS, cuDNN, NCCL, Triton), so a different torch or
CUDA library is a numerics cause; a system toolkit torch does not load is not.
"""

from __future__ import annotations

from ...model.fields import (
    CUDA_COMPUTED_ON,
    CUDA_CUDNN_VERSION,
    CUDA_TOOLKIT,
    CUDA_TORCH_BUILT_WITH,
    PACKAGES_DISTRIBUTIONS_NVIDIA,
    PACKAGES_DISTRIBUTIONS_TORCH,
    PACKAGES_DISTRIBUTIONS_TRITON,
    TORCH_BUILD,
    TORCH_CPU_CAPABILITY,
    TORCH_DEBUG,
    TORCH_GIT_VERSION,
    TORCH_HIP,
    TORCH_THREADS_ENV,
    TORCH_THREADS_INTER_OP,
    TORCH_THREADS_INTRA_OP,
    TORCH_VERSION,
)
from .. import citations as cite
from .. import conditions as cond
from .base import Rule, declared_rule

RULES: tuple[Rule, ...] = (
    declared_rule(
        CUDA_COMPUTED_ON,
        "One run computed on the GPU and the other on the CPU: different kernels sum in different "
        "orders, so the numbers differ from the first step even with identical seeds.",
        cite.CPU_VS_GPU,
        prior=3,
        condition=cond.computed_on,
        priority=370,
    ),
    declared_rule(
        TORCH_VERSION,
        "A different torch release ships different kernels (and sometimes defaults); results are "
        "not guaranteed to match across releases.",
        cite.TORCH,
        prior=3,
        priority=510,
    ),
    Rule(
        TORCH_GIT_VERSION,
        "numerics",
        "A different torch build ships different kernels.",
        cite.TORCH,
        prior=2,
        priority=520,
    ),
    declared_rule(
        CUDA_TORCH_BUILT_WITH,
        "This torch was built against a different CUDA, so different cuBLAS kernels ran.",
        cite.CUBLAS,
        prior=3,
        condition=cond.gpu_only,
        priority=530,
    ),
    declared_rule(
        CUDA_CUDNN_VERSION,
        "cuDNN promises the same bits only within one version.",
        cite.CUDNN_VERSION,
        prior=3,
        condition=cond.gpu_only,
        priority=540,
    ),
    Rule(
        TORCH_THREADS_INTRA_OP,
        "numerics",
        "The number of CPU threads changes how sums are split and so their rounding.",
        cite.THREADS,
        prior=2,
        priority=550,
    ),
    Rule(
        TORCH_THREADS_ENV,
        "numerics",
        "OMP/MKL thread settings change how CPU sums are split and so their rounding.",
        cite.THREADS,
        prior=2,
        priority=560,
    ),
    Rule(
        TORCH_CPU_CAPABILITY,
        "numerics",
        "torch dispatches different CPU kernels (DEFAULT/AVX2/AVX512), which round differently.",
        cite.CPU_ISA,
        prior=2,
        priority=570,
    ),
    Rule(
        TORCH_BUILD,
        "numerics",
        "A different torch build (BLAS, MKL, oneDNN version) ships different CPU kernels.",
        cite.TORCH,
        prior=2,
        priority=730,
    ),
    Rule(
        TORCH_DEBUG,
        "numerics",
        "A debug build of torch compiles kernels differently.",
        cite.TORCH,
        prior=1,
        priority=740,
    ),
    Rule(
        TORCH_HIP,
        "numerics",
        "One torch is a ROCm build: different kernels altogether.",
        cite.TORCH,
        prior=2,
        priority=750,
    ),
    Rule(
        TORCH_THREADS_INTER_OP,
        "numerics",
        "Inter-op threads run independent ops in parallel; rarely a cause of different numbers.",
        cite.THREADS,
        prior=1,
        priority=760,
    ),
    Rule(
        PACKAGES_DISTRIBUTIONS_TORCH,
        "numerics",
        "A different torch release ships different kernels.",
        cite.TORCH,
        prior=2,
        priority=820,
    ),
    Rule(
        PACKAGES_DISTRIBUTIONS_TRITON,
        "numerics",
        "A different Triton compiles different GPU kernels for torch.compile.",
        cite.TORCH,
        prior=1,
        priority=830,
    ),
    Rule(
        PACKAGES_DISTRIBUTIONS_NVIDIA,
        "numerics",
        "A different CUDA library wheel (cuBLAS, cuDNN, NCCL…) ships different kernels.",
        cite.CUBLAS,
        prior=2,
        condition=cond.gpu_only,
        priority=840,
    ),
    Rule(
        CUDA_TOOLKIT,
        "none",
        "The system CUDA toolkit (nvcc) is not the CUDA torch runs with; it only matters for "
        "extensions you compile.",
        cite.CUBLAS,
        priority=990,
    ),
)
