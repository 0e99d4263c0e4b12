"""The machine: OS, kernel, libc, CPU model and the ISA flags kernels dispatch on, memory and
container."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path
from typing import Any

from ..settings import IMAGE
from .context import ProbeContext
from .reading import safe

# CPU features that decide which kernels (and so which rounding) oneDNN, MKL and ATen pick.
ISA_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_bf16",
    "amx_tile",
    "amx_int8",
    "asimd",
    "sve",
    "sve2",
)
IMAGE_ENV = (IMAGE, "CONTAINER_IMAGE", "IMAGE_NAME")


def _os_release() -> str | None:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            for line in Path(path).read_text().splitlines():
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
        except OSError:
            continue
    return None


def _cpu() -> dict[str, Any]:
    model, flags = platform.processor() or None, set()
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "Model", "CPU part") and model in (None, "", platform.machine()):
            model = value.strip()
        elif key in ("flags", "Features"):
            flags.update(value.split())
        elif not line.strip() and flags:
            break  # the first processor block is enough
    affinity = (
        safe(lambda: len(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else None
    )
    return {
        "model": model,
        "isa_flags": sorted(flags.intersection(ISA_FLAGS)),
        "logical_cores": os.cpu_count(),
        "usable_cores": affinity,
    }


def _meminfo() -> dict[str, int]:
    out = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("MemTotal", "MemAvailable"):
                out[key] = int(value.split()[0]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


def container() -> dict[str, Any]:
    """docker/podman/kubernetes from the usual marks; the image name only when it was passed in
    (our Dockerfile bakes it into MLFLOW_FINGERPRINT_IMAGE), since no container can see its own."""
    kind = None
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        kind = "kubernetes"
    elif Path("/run/.containerenv").exists():
        kind = "podman"
    elif Path("/.dockerenv").exists():
        kind = "docker"
    else:
        try:
            cgroup = Path("/proc/1/cgroup").read_text()
        except OSError:
            cgroup = ""
        for marker in ("docker", "kubepods", "containerd", "lxc"):
            if marker in cgroup:
                kind = "kubernetes" if marker == "kubepods" else marker
                break
    image = next((os.environ[n] for n in IMAGE_ENV if os.environ.get(n)), None)
    return {"kind": kind, "image": image}


def probe(ctx: ProbeContext) -> dict[str, Any]:
    libc = safe(lambda: os.confstr("CS_GNU_LIBC_VERSION")) if hasattr(os, "confstr") else None
    mem = _meminfo()
    return {
        "system": platform.system(),
        "os": _os_release() or platform.platform(terse=True),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "libc": libc,
        "cpu": safe(_cpu),
        "memory_total_mib": mem.get("MemTotal"),
        "memory_available_mib": mem.get("MemAvailable"),
        "container": safe(container),
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
    }
