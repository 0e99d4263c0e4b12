"""The GPU itself: model, architecture, compute capability, SMs, MIG, ECC, driver, NVML.

cuBLAS and cuDNN promise the same bits only on the same architecture and SM count, so the
GPU fields are numerics causes where a GPU computed (``conditions.gpu_model``), and fields that
only say which card it was are ``none``.
"""

from __future__ import annotations

from .. import citations as cite
from .. import conditions as cond
from .base import Rule, declared_rule

RULES: tuple[Rule, ...] = (
    Rule(
        "gpu.devices.*.architecture",
        "numerics",
        "Different GPU architectures run different kernels; no cuDNN routine is bit-reproducible "
        "across architectures.",
        cite.GPU_MODEL,
        prior=3,
        condition=cond.gpu_model,
        priority=380,
    ),
    Rule(
        "gpu.devices.*.compute_capability",
        "numerics",
        "A different compute capability means different kernels and reduction orders.",
        cite.GPU_MODEL,
        prior=3,
        condition=cond.gpu_model,
        priority=390,
    ),
    Rule(
        "gpu.devices.*.sm_count",
        "numerics",
        "cuBLAS is bit-reproducible only on the same number of SMs; a different count splits "
        "the work differently.",
        cite.SM_COUNT,
        prior=3,
        condition=cond.gpu_model,
        priority=400,
    ),
    Rule(
        "gpu.devices.*.name",
        "numerics",
        "A different GPU model runs different kernels, so the last bits differ and grow.",
        cite.GPU_MODEL,
        prior=3,
        condition=cond.gpu_model,
        priority=410,
    ),
    Rule(
        "gpu.devices.*.mig_devices.*.sm_count",
        "numerics",
        "The MIG slice has a different number of SMs, which changes how cuBLAS splits the work.",
        cite.SM_COUNT,
        prior=3,
        condition=cond.gpu_model,
        priority=420,
    ),
    Rule(
        "gpu.devices.*.mig_mode",
        "numerics",
        "A MIG slice exposes fewer SMs, which changes how cuBLAS splits the work.",
        cite.MIG_MODE,
        prior=2,
        condition=cond.gpu_model,
        priority=430,
    ),
    declared_rule(
        "gpu.driver_version",
        "The kernels ship inside the torch wheel, so a driver change rarely changes results.",
        cite.DRIVER,
        prior=1,
        condition=cond.driver,
        priority=850,
    ),
    Rule(
        "gpu.cuda_driver_version",
        "numerics",
        "The CUDA version the driver supports; torch brings its own CUDA libraries, so this "
        "rarely changes results.",
        cite.DRIVER,
        prior=1,
        condition=cond.driver,
        priority=860,
    ),
    Rule(
        "gpu.devices.*.ecc_mode",
        "none",
        "ECC protects memory; it does not change arithmetic.",
        cite.ECC,
        priority=890,
    ),
    Rule(
        "gpu.devices.*.power_limit_w",
        "none",
        "A power cap lowers the clocks under load: it changes speed, not arithmetic (kernels "
        "chosen by timing, as with cudnn.benchmark, are compared on their own).",
        cite.POWER_LIMIT,
        priority=895,
    ),
    Rule(
        "gpu.devices.*.memory_total_mib",
        "none",
        "The amount of GPU memory does not change arithmetic.",
        cite.NOT_ARITHMETIC,
        priority=900,
    ),
    Rule(
        "gpu.devices.*.uuid_digest",
        "none",
        "Which physical card it was.",
        cite.NOT_ARITHMETIC,
        priority=910,
    ),
    Rule(
        "gpu.devices.*.index",
        "none",
        "The device's position in NVML's list.",
        cite.NOT_ARITHMETIC,
        priority=920,
    ),
    Rule(
        "gpu.devices.*.mig_devices",
        "none",
        "Which MIG slices exist; their SM counts are compared on their own.",
        cite.NOT_ARITHMETIC,
        priority=930,
    ),
    Rule(
        "gpu.torch_devices",
        "none",
        "torch's view of the same GPUs, read only where CUDA was already initialised; the NVML "
        "fields are compared instead.",
        cite.NOT_ARITHMETIC,
        priority=940,
    ),
    Rule(
        "gpu.visible_devices",
        "none",
        "CUDA_VISIBLE_DEVICES; the GPUs themselves are compared field by field.",
        cite.NOT_ARITHMETIC,
        priority=950,
    ),
    Rule(
        "gpu.device_count",
        "none",
        "How many GPUs the machine had; how many trained is distributed.world_size.",
        cite.WORLD,
        priority=960,
    ),
    Rule(
        "gpu.nvml_version",
        "none",
        "The monitoring library's version.",
        cite.NOT_ARITHMETIC,
        priority=970,
    ),
    Rule(
        "gpu.source",
        "none",
        "Where the GPU facts were read from.",
        cite.NOT_ARITHMETIC,
        priority=980,
    ),
)
