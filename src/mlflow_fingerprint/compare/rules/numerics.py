"""Flags that change arithmetic: TF32, reduced-precision reductions, oneDNN, SDPA backends, and
whether the training ran code torch.compile made (``first_step.compiled``).

TF32 exists only from compute capability 8.0 (``conditions.tf32``), and the CUDA-only flags
change nothing where no GPU computed (``conditions.gpu_only``).
"""

from __future__ import annotations

from ...model.fields import (
    FIRST_STEP_COMPILED,
    NUMERICS_BLAS_LIBRARY,
    NUMERICS_ENV_NVIDIA_TF32_OVERRIDE,
    NUMERICS_ENV_TORCH_ALLOW_TF32_CUBLAS_OVERRIDE,
    NUMERICS_FP16_ACCUMULATION,
    NUMERICS_FP32_PRECISION,
    NUMERICS_FP32_PRECISION_CUDA_MATMUL,
    NUMERICS_FP32_PRECISION_CUDNN_CONV,
    NUMERICS_FP32_PRECISION_CUDNN_RNN,
    NUMERICS_RAW,
    NUMERICS_REDUCED_PRECISION_REDUCTION,
    NUMERICS_SDPA,
)
from .. import citations as cite
from .. import conditions as cond
from .base import Rule, declared_rule

RULES: tuple[Rule, ...] = (
    Rule(
        NUMERICS_FP32_PRECISION_CUDA_MATMUL,
        "numerics",
        "TF32 matmuls round inputs to 10 mantissa bits: errors around 1e-3 instead of 1e-5.",
        cite.MATMUL_TF32,
        prior=3,
        condition=cond.tf32,
        priority=320,
    ),
    Rule(
        NUMERICS_FP32_PRECISION_CUDNN_CONV,
        "numerics",
        "TF32 convolutions round inputs to 10 mantissa bits, so conv results change.",
        cite.CUDNN_TF32,
        prior=3,
        condition=cond.tf32,
        priority=330,
    ),
    Rule(
        NUMERICS_FP32_PRECISION_CUDNN_RNN,
        "numerics",
        "TF32 in cuDNN RNNs rounds inputs to 10 mantissa bits, so RNN results change.",
        cite.CUDNN_TF32,
        prior=3,
        condition=cond.tf32,
        priority=340,
    ),
    Rule(
        NUMERICS_ENV_NVIDIA_TF32_OVERRIDE,
        "numerics",
        "NVIDIA_TF32_OVERRIDE=0 turns TF32 off in NVIDIA's libraries whatever torch asks for.",
        cite.TF32_OVERRIDE,
        prior=3,
        condition=cond.tf32,
        priority=350,
    ),
    Rule(
        NUMERICS_ENV_TORCH_ALLOW_TF32_CUBLAS_OVERRIDE,
        "numerics",
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 turns TF32 matmuls on by default.",
        cite.TF32_CUBLAS_OVERRIDE,
        prior=3,
        condition=cond.tf32,
        priority=360,
    ),
    declared_rule(
        NUMERICS_BLAS_LIBRARY,
        "cuBLAS and cuBLASLt pick different GEMM kernels for the same matmul, so the sums are "
        "reduced in another order (torchtitan's loss baselines moved by about 6e-5).",
        cite.Source(
            "https://github.com/pytorch/torchtitan/issues/2474",
            "Preferred BLAS library (`torch.backends.cuda.preferred_blas_library`, "
            "TORCH_BLAS_PREFER_CUBLASLT)",
        ),
        prior=3,
        condition=cond.gpu_only,
        priority=542,
    ),
    Rule(
        FIRST_STEP_COMPILED,
        "numerics",
        "Code torch.compile made rounds otherwise than eager: inductor fuses ops into kernels "
        "that sum in another order, and max-autotune picks kernels by timing them.",
        cite.Source(
            "https://docs.pytorch.org/docs/stable/generated/torch.compile.html",
            "Compiled code at the first step (`torch.compile` backend and mode)",
        ),
        prior=2,
        condition=cond.compiled_kernels,
        priority=544,
    ),
    Rule(
        NUMERICS_FP32_PRECISION,
        "numerics",
        "On CPU, oneDNN may compute fp32 work in bf16 or TF32, which changes results.",
        cite.ONEDNN,
        prior=2,
        priority=600,
    ),
    Rule(
        NUMERICS_REDUCED_PRECISION_REDUCTION,
        "numerics",
        "Half-precision (fp16/bf16) matmuls may keep partial sums in reduced precision.",
        cite.REDUCED_PRECISION,
        prior=2,
        condition=cond.gpu_only,
        priority=610,
    ),
    Rule(
        NUMERICS_FP16_ACCUMULATION,
        "numerics",
        "Half-precision matmuls may accumulate in fp16.",
        cite.FP16_ACCUMULATION,
        prior=2,
        condition=cond.gpu_only,
        priority=620,
    ),
    Rule(
        NUMERICS_SDPA,
        "numerics",
        "A different set of attention backends; they are never bit-equal to each other.",
        cite.SDPA,
        prior=2,
        condition=cond.gpu_only,
        priority=630,
    ),
    Rule(
        NUMERICS_RAW,
        "none",
        "A different spelling of the same TF32 setting; the resolved numerics.fp32_precision "
        "fields carry the meaning.",
        cite.MATMUL_TF32,
        priority=870,
    ),
)
