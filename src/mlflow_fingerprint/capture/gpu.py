"""The ``gpu`` section: which NVIDIA GPUs, driver and driver CUDA version this process runs on.

Every device fact comes from NVML, because reading NVML never creates a CUDA context; torch's
view of the devices is added only when the process has already initialised CUDA itself. A field
NVML cannot read becomes ``{"unavailable": reason}`` and the rest of the section is kept, since a
consumer card that refuses one query (ECC, MIG) still has a name and an architecture worth
comparing.

The architecture is derived from the compute capability, not taken from NVML's architecture
constant, because the capability is what decides numerics (TF32 from 8.0) and older drivers
report newer chips as "unknown"; NVML's constant is the fallback for a capability this table
does not know yet.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Sequence
from typing import Any

from ..model.fingerprint import is_unavailable, unavailable
from .context import ProbeContext

MIB = 1024 * 1024

# From NVIDIA's CUDA GPUs pages (https://developer.nvidia.com/cuda-gpus) and the CUDA Programming
# Guide's compute-capability table.
# The minor version matters: 7.5 is Turing, not Volta; 8.9 is Ada, not Ampere.
ARCH_BY_CAPABILITY: dict[tuple[int, int], str] = {
    **dict.fromkeys([(3, 0), (3, 2), (3, 5), (3, 7)], "Kepler"),
    **dict.fromkeys([(5, 0), (5, 2), (5, 3)], "Maxwell"),
    **dict.fromkeys([(6, 0), (6, 1), (6, 2)], "Pascal"),
    **dict.fromkeys([(7, 0), (7, 2)], "Volta"),
    (7, 5): "Turing",
    **dict.fromkeys([(8, 0), (8, 6), (8, 7)], "Ampere"),
    (8, 9): "Ada",
    (9, 0): "Hopper",
    **dict.fromkeys([(10, 0), (10, 3), (11, 0), (12, 0), (12, 1)], "Blackwell"),
}

# nvidia-ml-py 13.615.71 ``NVML_DEVICE_ARCH_*``; DLA/NPU codes are not GPUs and are left out.
ARCH_BY_NVML_CONST: dict[int, str] = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada",
    9: "Hopper",
    10: "Blackwell",
    13: "Rubin",
}

# FP32 CUDA cores per SM (CUDA samples' ``_ConvertSMVer2Cores``). NVML has no SM count for a
# whole GPU (``nvmlDeviceGetAttributes`` serves MIG device handles only), so the SM count of a
# full GPU is its NVML core count divided by this.
CORES_PER_SM: dict[tuple[int, int], int] = {
    **dict.fromkeys([(3, 0), (3, 2), (3, 5), (3, 7)], 192),
    **dict.fromkeys([(5, 0), (5, 2), (5, 3)], 128),
    (6, 0): 64,
    **dict.fromkeys([(6, 1), (6, 2)], 128),
    **dict.fromkeys([(7, 0), (7, 2), (7, 5), (8, 0)], 64),
    **dict.fromkeys([(8, 6), (8, 7), (8, 9), (9, 0)], 128),
    **dict.fromkeys([(10, 0), (10, 3), (11, 0), (12, 0), (12, 1)], 128),
}

NOT_INITIALISED = "CUDA not initialised in this process (not initialised by capture on purpose)"

# NVML errors that mean there is no usable NVIDIA driver at all, as opposed to a refused query.
_NO_DRIVER_ERRORS = ("NVMLError_LibraryNotFound", "NVMLError_DriverNotLoaded")


def architecture_from_capability(major: int, minor: int) -> str:
    """The architecture name of compute capability ``major.minor``; ``Unknown (sm_XY)`` if new."""
    return ARCH_BY_CAPABILITY.get((major, minor), f"Unknown (sm_{major}{minor})")


def _reason(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _read(nvml: Any, call: str, *args: Any, convert: Callable[[Any], Any] | None = None) -> Any:
    """One NVML reading, converted, or ``unavailable`` saying which call failed and why."""
    fn = getattr(nvml, call, None)
    if fn is None:
        return unavailable(f"{call} is not in this NVML binding")
    try:
        value = fn(*args)
        return convert(value) if convert is not None else value
    except Exception as exc:  # NVMLError mostly; one field must never cost the section
        return unavailable(f"NVML {call}: {_reason(exc)}")


def _text(value: Any) -> str:
    """pynvml returned bytes before 11.x and str since; record str either way."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _uuid_digest(uuid: Any) -> str:
    """A UUID identifies one physical card: record only that it is the same card, not which."""
    return hashlib.sha256(_text(uuid).encode()).hexdigest()[:12]


def _cuda_version(value: int) -> str:
    """NVML encodes the CUDA version as ``1000 * major + 10 * minor`` (13000 is 13.0)."""
    return f"{value // 1000}.{value % 1000 // 10}"


def _state(value: Sequence[int]) -> str:
    """``[current, pending]`` of a MIG or ECC mode; 1 is NVML's ENABLE for both."""
    return "enabled" if int(value[0]) == 1 else "disabled"


def _watts(milliwatts: int) -> int | float:
    """NVML gives milliwatts; a power limit is nearly always whole watts (700000 is 700)."""
    return milliwatts // 1000 if milliwatts % 1000 == 0 else milliwatts / 1000


def _capability(value: Sequence[int]) -> tuple[int, int]:
    return int(value[0]), int(value[1])


def _cuda_driver_version(nvml: Any) -> Any:
    """The newest CUDA the driver supports. ``_v2`` reads libcuda itself; the v1 call falls back
    to a built-in figure where libcuda is missing, so it is the second choice."""
    v2 = _read(nvml, "nvmlSystemGetCudaDriverVersion_v2", convert=_cuda_version)
    if not is_unavailable(v2):
        return v2
    v1 = _read(nvml, "nvmlSystemGetCudaDriverVersion", convert=_cuda_version)
    return v2 if is_unavailable(v1) else v1


def _architecture(nvml: Any, handle: Any, capability: Any) -> Any:
    if isinstance(capability, tuple) and capability in ARCH_BY_CAPABILITY:
        return ARCH_BY_CAPABILITY[capability]
    const = _read(nvml, "nvmlDeviceGetArchitecture", handle)
    if isinstance(const, int) and const in ARCH_BY_NVML_CONST:
        return ARCH_BY_NVML_CONST[const]
    if isinstance(capability, tuple):
        return architecture_from_capability(*capability)
    return unavailable(f"compute capability unreadable ({capability['unavailable']})")


def _sm_count(nvml: Any, handle: Any, capability: Any) -> Any:
    """NVML's own SM count where it gives one, else CUDA cores / cores per SM of the arch."""
    direct = _read(
        nvml, "nvmlDeviceGetAttributes", handle, convert=lambda a: int(a.multiprocessorCount)
    )
    if isinstance(direct, int) and direct > 0:
        return direct
    cores = _read(nvml, "nvmlDeviceGetNumGpuCores", handle)
    if is_unavailable(cores):
        return cores
    per_sm = CORES_PER_SM.get(capability) if isinstance(capability, tuple) else None
    if per_sm is None:
        return unavailable(f"{cores} CUDA cores, but cores per SM unknown for this capability")
    if cores % per_sm:
        return unavailable(f"{cores} CUDA cores is not a whole number of {per_sm}-core SMs")
    return cores // per_sm


def _mig_device(nvml: Any, mig: Any, index: int) -> dict[str, Any]:
    attributes = _read(nvml, "nvmlDeviceGetAttributes", mig)
    if is_unavailable(attributes):
        sm_count = memory = attributes
    else:
        sm_count = int(attributes.multiprocessorCount)
        memory = int(attributes.memorySizeMB)
    return {
        "index": index,
        "sm_count": sm_count,
        "memory_total_mib": memory,
        "uuid_digest": _read(nvml, "nvmlDeviceGetUUID", mig, convert=_uuid_digest),
    }


def _mig_devices(nvml: Any, handle: Any) -> Any:
    """The MIG slices of a MIG-enabled GPU: a process runs on one, with that slice's SMs."""
    slots = _read(nvml, "nvmlDeviceGetMaxMigDeviceCount", handle)
    if is_unavailable(slots):
        return slots
    devices = []
    for i in range(int(slots)):
        mig = _read(nvml, "nvmlDeviceGetMigDeviceHandleByIndex", handle, i)
        if not is_unavailable(mig):  # an empty slot reads as NotFound
            devices.append(_mig_device(nvml, mig, i))
    return devices


def _device(nvml: Any, index: int) -> dict[str, Any]:
    handle = _read(nvml, "nvmlDeviceGetHandleByIndex", index)
    if is_unavailable(handle):
        return handle
    capability = _read(nvml, "nvmlDeviceGetCudaComputeCapability", handle, convert=_capability)
    mig_mode = _read(nvml, "nvmlDeviceGetMigMode", handle, convert=_state)
    device: dict[str, Any] = {
        "index": index,
        "name": _read(nvml, "nvmlDeviceGetName", handle, convert=_text),
        "compute_capability": (
            f"{capability[0]}.{capability[1]}" if isinstance(capability, tuple) else capability
        ),
        "architecture": _architecture(nvml, handle, capability),
        "sm_count": _sm_count(nvml, handle, capability),
        "memory_total_mib": _read(
            nvml, "nvmlDeviceGetMemoryInfo", handle, convert=lambda m: int(m.total) // MIB
        ),
        "mig_mode": mig_mode,
        "ecc_mode": _read(nvml, "nvmlDeviceGetEccMode", handle, convert=_state),
        # A capped GPU runs slower. This is the limit an administrator sets (nvidia-smi -pl),
        # which stays put; NVML's enforced limit also follows out-of-band limiters that can move
        # mid-run, which would make two captures of one process hash differently.
        # https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html
        "power_limit_w": _read(nvml, "nvmlDeviceGetPowerManagementLimit", handle, convert=_watts),
        "uuid_digest": _read(nvml, "nvmlDeviceGetUUID", handle, convert=_uuid_digest),
    }
    if mig_mode == "enabled":
        device["mig_devices"] = _mig_devices(nvml, handle)
    return device


def _torch_devices(ctx: ProbeContext) -> Any:
    """torch's view of the devices, only if CUDA is already up: initialising it here would
    allocate a context on every visible GPU and break a later fork of the user's process."""
    if ctx.torch is None:
        return unavailable(f"torch not available ({ctx.torch_error})")
    cuda = getattr(ctx.torch, "cuda", None)
    try:
        if cuda is None or not cuda.is_initialized():
            return unavailable(NOT_INITIALISED)
        props = [cuda.get_device_properties(i) for i in range(cuda.device_count())]
    except Exception as exc:
        return unavailable(f"torch.cuda: {_reason(exc)}")
    return [
        {
            "index": i,
            "name": p.name,
            "compute_capability": f"{p.major}.{p.minor}",
            "sm_count": p.multi_processor_count,
            "memory_total_mib": p.total_memory // MIB,
        }
        for i, p in enumerate(props)
    ]


def _init_failure(exc: BaseException) -> dict[str, str]:
    if type(exc).__name__ in _NO_DRIVER_ERRORS:
        return unavailable(f"no NVIDIA driver (NVML: {_reason(exc)})")
    return unavailable(f"NVML could not start ({type(exc).__name__}: {_reason(exc)})")


def _section(ctx: ProbeContext) -> dict[str, Any]:
    nvml = ctx.nvml
    count = _read(nvml, "nvmlDeviceGetCount")
    return {
        "source": ctx.nvml_source,
        "driver_version": _read(nvml, "nvmlSystemGetDriverVersion", convert=_text),
        "cuda_driver_version": _cuda_driver_version(nvml),
        "nvml_version": _read(nvml, "nvmlSystemGetNVMLVersion", convert=_text),
        "device_count": count,
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "devices": count if is_unavailable(count) else [_device(nvml, i) for i in range(count)],
        "torch_devices": _torch_devices(ctx),
    }


def probe(ctx: ProbeContext) -> dict[str, Any]:
    """The ``gpu`` section. Never raises; a hung driver is cut by the caller's time limit."""
    if ctx.nvml is None:
        return unavailable(f"NVML not available ({ctx.nvml_error})")
    try:
        ctx.nvml.nvmlInit()
    except Exception as exc:
        return _init_failure(exc)
    try:
        return _section(ctx)
    finally:
        with contextlib.suppress(Exception):  # a failed shutdown must not lose the readings
            ctx.nvml.nvmlShutdown()
