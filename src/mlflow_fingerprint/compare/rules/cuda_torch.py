"""The torch build and the CUDA libraries it ships with: versions, threads, CPU kernels.

Kernels ship inside the torch wheel (cuBLAS, cuDNN, NCCL, Triton), so a different torch or
CUDA library is a numerics cause; a system toolkit torch does not load is not.
"""

from __future__ import annotations

from .. import citations as cite
from .. import conditions as cond
from .base import Rule, declared_rule

RULES: tuple[Rule, ...] = (
    declared_rule(
        "cuda.computed_on",
        "One run computed on the GPU and the other on the CPU: different kernels sum in different "
        "orders, so the numbers differ from the first step even with identical seeds.",
        cite.CPU_VS_GPU,
        prior=3,
        condition=cond.computed_on,
        priority=370,
    ),
    declared_rule(
        "torch.version",
        "A different torch release ships different kernels (and sometimes defaults); results are "
        "not guaranteed to match across releases.",
        cite.TORCH,
        prior=3,
        priority=510,
    ),
    Rule(
        "torch.git_version",
        "numerics",
        "A different torch build ships different kernels.",
        cite.TORCH,
        prior=2,
        priority=520,
    ),
    declared_rule(
        "cuda.torch_built_with",
        "This torch was built against a different CUDA, so different cuBLAS kernels ran.",
        cite.CUBLAS,
        prior=3,
        condition=cond.gpu_only,
        priority=530,
    ),
    declared_rule(
        "cuda.cudnn_version",
        "cuDNN promises the same bits only within one version.",
        cite.CUDNN_VERSION,
        prior=3,
        condition=cond.gpu_only,
        priority=540,
    ),
    Rule(
        "torch.threads.intra_op",
        "numerics",
        "The number of CPU threads changes how sums are split and so their rounding.",
        cite.THREADS,
        prior=2,
        priority=550,
    ),
    Rule(
        "torch.threads.env",
        "numerics",
        "OMP/MKL thread settings change how CPU sums are split and so their rounding.",
        cite.THREADS,
        prior=2,
        priority=560,
    ),
    Rule(
        "torch.cpu_capability",
        "numerics",
        "torch dispatches different CPU kernels (DEFAULT/AVX2/AVX512), which round differently.",
        cite.CPU_ISA,
        prior=2,
        priority=570,
    ),
    Rule(
        "torch.build",
        "numerics",
        "A different torch build (BLAS, MKL, oneDNN version) ships different CPU kernels.",
        cite.TORCH,
        prior=2,
        priority=730,
    ),
    Rule(
        "torch.debug",
        "numerics",
        "A debug build of torch compiles kernels differently.",
        cite.TORCH,
        prior=1,
        priority=740,
    ),
    Rule(
        "torch.hip",
        "numerics",
        "One torch is a ROCm build: different kernels altogether.",
        cite.TORCH,
        prior=2,
        priority=750,
    ),
    Rule(
        "torch.threads.inter_op",
        "numerics",
        "Inter-op threads run independent ops in parallel; rarely a cause of different numbers.",
        cite.THREADS,
        prior=1,
        priority=760,
    ),
    Rule(
        "packages.distributions.torch",
        "numerics",
        "A different torch release ships different kernels.",
        cite.TORCH,
        prior=2,
        priority=820,
    ),
    Rule(
        "packages.distributions.triton",
        "numerics",
        "A different Triton compiles different GPU kernels for torch.compile.",
        cite.TORCH,
        prior=1,
        priority=830,
    ),
    Rule(
        "packages.distributions.nvidia-*",
        "numerics",
        "A different CUDA library wheel (cuBLAS, cuDNN, NCCL…) ships different kernels.",
        cite.CUBLAS,
        prior=2,
        condition=cond.gpu_only,
        priority=840,
    ),
    Rule(
        "cuda.toolkit",
        "none",
        "The system CUDA toolkit (nvcc) is not the CUDA torch runs with; it only matters for "
        "extensions you compile.",
        cite.CUBLAS,
        priority=990,
    ),
)
