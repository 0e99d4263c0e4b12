"""The machine and interpreter around torch: CPU, OS, Python, other packages, the record format."""

from __future__ import annotations

from ...model.fields import (
    PLATFORM_CPU_ISA_FLAGS,
    PLATFORM_CPU_MODEL,
    PLATFORM_LIBC,
    PLATFORM_MACHINE,
    PYTHON_IMPLEMENTATION,
    PYTHON_VERSION,
)
from .. import citations as cite
from .base import Rule

RULES: tuple[Rule, ...] = (
    Rule(
        PLATFORM_CPU_ISA_FLAGS,
        "numerics",
        "A CPU with different instruction sets makes torch, MKL and oneDNN pick other kernels.",
        cite.CPU_ISA,
        prior=2,
        priority=770,
    ),
    Rule(
        PLATFORM_CPU_MODEL,
        "numerics",
        "A different CPU model can make MKL and oneDNN pick other kernels.",
        cite.CPU_ISA,
        prior=1,
        priority=780,
    ),
    Rule(
        PLATFORM_MACHINE,
        "numerics",
        "A different CPU architecture (x86_64 vs aarch64) runs different kernels altogether.",
        cite.CPU_ISA,
        prior=2,
        priority=790,
    ),
    Rule(
        PYTHON_VERSION,
        "numerics",
        "A different Python version; results have been seen to change with it.",
        cite.PYTHON,
        prior=1,
        priority=800,
    ),
    Rule(
        PYTHON_IMPLEMENTATION,
        "numerics",
        "A different Python implementation.",
        cite.PYTHON,
        prior=1,
        priority=810,
    ),
    Rule(
        "packages",
        "none",
        "A library that does not compute your tensors; check it if your training code calls it.",
        cite.NOT_ARITHMETIC,
        priority=1010,
    ),
    Rule(
        "platform",
        "none",
        "The machine's name, OS, memory or container; not arithmetic.",
        cite.NOT_ARITHMETIC,
        priority=1190,
    ),
    Rule(
        PLATFORM_LIBC,
        "none",
        "The C library; torch's kernels do not call its maths functions.",
        cite.NOT_ARITHMETIC,
        priority=1200,
    ),
    Rule(
        "python",
        "none",
        "How the interpreter was built or where it lives.",
        cite.NOT_ARITHMETIC,
        priority=1210,
    ),
    Rule(
        "schema_version",
        "none",
        "The records come from different releases; fields new in one are absent in the other.",
        cite.SCHEMA,
        priority=1230,
    ),
)
