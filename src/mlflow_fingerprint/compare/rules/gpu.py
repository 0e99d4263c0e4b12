"""The GPU itself: model, architecture, compute capability, SMs, MIG, ECC, driver, NVML.

cuBLAS and cuDNN promise the same bits only on the same architecture and SM count, so the
GPU fields are numerics causes where a GPU computed (``conditions.gpu_model``), and fields that
only say which card it was are ``none``.
"""

from __future__ import annotations

from ...model.fields import (
    GPU_CUDA_DRIVER_VERSION,
    GPU_DEVICE_COUNT,
    GPU_DEVICES_EACH_ARCHITECTURE,
    GPU_DEVICES_EACH_COMPUTE_CAPABILITY,
    GPU_DEVICES_EACH_ECC_MODE,
    GPU_DEVICES_EACH_INDEX,
    GPU_DEVICES_EACH_MEMORY_TOTAL_MIB,
    GPU_DEVICES_EACH_MIG_DEVICES,
    GPU_DEVICES_EACH_MIG_DEVICES_EACH_SM_COUNT,
    GPU_DEVICES_EACH_MIG_MODE,
    GPU_DEVICES_EACH_NAME,
    GPU_DEVICES_EACH_POWER_LIMIT_W,
    GPU_DEVICES_EACH_SM_COUNT,
    GPU_DEVICES_EACH_UUID_DIGEST,
    GPU_DRIVER_VERSION,
    GPU_NVML_VERSION,
    GPU_SOURCE,
    GPU_TORCH_DEVICES,
    GPU_VISIBLE_DEVICES,
)
from .. import citations as cite
from .. import conditions as cond
from .base import Rule, declared_rule

RULES: tuple[Rule, ...] = (
    Rule(
        GPU_DEVICES_EACH_ARCHITECTURE,
        "numerics",
        "Different GPU architectures run different kernels; no cuDNN routine is bit-reproducible "
        "across architectures.",
        cite.GPU_MODEL,
        prior=3,
        condition=cond.gpu_model,
        priority=380,
    ),
    Rule(
        GPU_DEVICES_EACH_COMPUTE_CAPABILITY,
        "numerics",
        "A different compute capability means different kernels and reduction orders.",
        cite.GPU_MODEL,
        prior=3,
        condition=cond.gpu_model,
        priority=390,
    ),
    Rule(
        GPU_DEVICES_EACH_SM_COUNT,
        "numerics",
        "cuBLAS is bit-reproducible only on the same number of SMs; a different count splits "
        "the work differently.",
        cite.SM_COUNT,
        prior=3,
        condition=cond.gpu_model,
        priority=400,
    ),
    Rule(
        GPU_DEVICES_EACH_NAME,
        "numerics",
        "A different GPU model runs different kernels, so the last bits differ and grow.",
        cite.GPU_MODEL,
        prior=3,
        condition=cond.gpu_model,
        priority=410,
    ),
    Rule(
        GPU_DEVICES_EACH_MIG_DEVICES_EACH_SM_COUNT,
        "numerics",
        "The MIG slice has a different number of SMs, which changes how cuBLAS splits the work.",
        cite.SM_COUNT,
        prior=3,
        condition=cond.gpu_model,
        priority=420,
    ),
    Rule(
        GPU_DEVICES_EACH_MIG_MODE,
        "numerics",
        "A MIG slice exposes fewer SMs, which changes how cuBLAS splits the work.",
        cite.MIG_MODE,
        prior=2,
        condition=cond.gpu_model,
        priority=430,
    ),
    declared_rule(
        GPU_DRIVER_VERSION,
        "The kernels ship inside the torch wheel, so a driver change rarely changes results.",
        cite.DRIVER,
        prior=1,
        condition=cond.driver,
        priority=850,
    ),
    Rule(
        GPU_CUDA_DRIVER_VERSION,
        "numerics",
        "The CUDA version the driver supports; torch brings its own CUDA libraries, so this "
        "rarely changes results.",
        cite.DRIVER,
        prior=1,
        condition=cond.driver,
        priority=860,
    ),
    Rule(
        GPU_DEVICES_EACH_ECC_MODE,
        "none",
        "ECC protects memory; it does not change arithmetic.",
        cite.ECC,
        priority=890,
    ),
    Rule(
        GPU_DEVICES_EACH_POWER_LIMIT_W,
        "none",
        "A power cap lowers the clocks under load: it changes speed, not arithmetic (kernels "
        "chosen by timing, as with cudnn.benchmark, are compared on their own).",
        cite.POWER_LIMIT,
        priority=895,
    ),
    Rule(
        GPU_DEVICES_EACH_MEMORY_TOTAL_MIB,
        "none",
        "The amount of GPU memory does not change arithmetic.",
        cite.NOT_ARITHMETIC,
        priority=900,
    ),
    Rule(
        GPU_DEVICES_EACH_UUID_DIGEST,
        "none",
        "Which physical card it was.",
        cite.NOT_ARITHMETIC,
        priority=910,
    ),
    Rule(
        GPU_DEVICES_EACH_INDEX,
        "none",
        "The device's position in NVML's list.",
        cite.NOT_ARITHMETIC,
        priority=920,
    ),
    Rule(
        GPU_DEVICES_EACH_MIG_DEVICES,
        "none",
        "Which MIG slices exist; their SM counts are compared on their own.",
        cite.NOT_ARITHMETIC,
        priority=930,
    ),
    Rule(
        GPU_TORCH_DEVICES,
        "none",
        "torch's view of the same GPUs, read only where CUDA was already initialised; the NVML "
        "fields are compared instead.",
        cite.NOT_ARITHMETIC,
        priority=940,
    ),
    Rule(
        GPU_VISIBLE_DEVICES,
        "none",
        "CUDA_VISIBLE_DEVICES; the GPUs themselves are compared field by field.",
        cite.NOT_ARITHMETIC,
        priority=950,
    ),
    Rule(
        GPU_DEVICE_COUNT,
        "none",
        "How many GPUs the machine had; how many trained is distributed.world_size.",
        cite.WORLD,
        priority=960,
    ),
    Rule(
        GPU_NVML_VERSION,
        "none",
        "The monitoring library's version.",
        cite.NOT_ARITHMETIC,
        priority=970,
    ),
    Rule(
        GPU_SOURCE,
        "none",
        "Where the GPU facts were read from.",
        cite.NOT_ARITHMETIC,
        priority=980,
    ),
)
