"""The three CUDA versions people confuse, kept apart.

What torch was built with (``cuda.torch_built_with``), what the driver supports
(``gpu.cuda_driver_version``, from NVML) and the system toolkit (``cuda.toolkit``, nvcc).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from ..model.fingerprint import unavailable
from . import process
from .context import ProbeContext
from .reading import read, safe, torch_missing

NVCC_TIMEOUT_S = 3.0


def format_cudnn(version: Any) -> Any:
    """cuDNN reports 90100 (9.1.0) or 8902 (8.9.2): decode both numbering schemes."""
    if not isinstance(version, int) or isinstance(version, bool):
        return version
    if version >= 90000:
        major, rest = divmod(version, 10000)
        minor, patch = divmod(rest, 100)
    else:
        major, rest = divmod(version, 1000)
        minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"


def _loaded_libraries(prefix: str) -> list[str]:
    """Paths of the shared libraries named ``prefix*`` this process has mapped (Linux)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    paths = {line.split()[-1] for line in maps.splitlines() if "/" in line}
    return sorted(p for p in paths if Path(p).name.startswith(prefix))


def _loaded_cudnn_version() -> Any:
    """cuDNN's own ``cudnnGetVersion()``, asked of the library torch loaded. A plain getter: no
    device, context or handle is touched, and nothing of torch.cuda runs."""
    for path in _loaded_libraries("libcudnn.so"):
        try:
            return int(ctypes.CDLL(path).cudnnGetVersion())
        except (OSError, AttributeError):
            continue
    return unavailable("CUDA not initialised, and no loaded libcudnn to ask")


def cudnn_version(torch: Any) -> Any:
    """The cuDNN torch loaded. ``torch.backends.cudnn.version()`` initialises CUDA (seen with
    torch 2.11 on an H100: ``torch.cuda.is_initialized()`` turned true, see README, "On a real
    GPU"), so it is read only where the program has initialised CUDA already; otherwise the loaded
    library is asked directly, which gives the same number."""
    if not read(torch, "version.cuda"):
        return None
    if torch.cuda.is_initialized():
        return read(torch, "backends.cudnn.version", call=True)
    return _loaded_cudnn_version()


def _nccl_version(torch: Any) -> Any:
    if torch.version.cuda is None:
        return None
    version = read(torch, "cuda.nccl.version", call=True)
    if isinstance(version, tuple):
        return ".".join(str(v) for v in version)
    if isinstance(version, int):  # older torch: 21803 -> 2.18.3
        major, rest = divmod(version, 10000) if version >= 10000 else divmod(version, 1000)
        minor, patch = divmod(rest, 100)
        return f"{major}.{minor}.{patch}"
    return version


# cuda.h's own version (12040 is 12.4), near the top of a header of about a megabyte.
CUDA_H_VERSION = re.compile(rb"^#define CUDA_VERSION (\d+)\s*$", re.MULTILINE)
CUDA_H_READ_BYTES = 64 * 1024
DEFAULT_HOME = "/usr/local/cuda"


def toolkit_version() -> Any:
    """The system CUDA toolkit, looked up once per (CUDA_HOME, CUDA_PATH, PATH)."""
    key = (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), os.environ.get("PATH"))
    return _toolkit_version(*key)


def _home_version(home: Path) -> dict[str, str] | None:
    """The toolkit installed at ``home``, from its files: ``version.json`` (a runfile or package
    install), else the ``CUDA_VERSION`` of ``include/cuda.h`` beside a ``bin/nvcc`` (a toolkit
    assembled from NVIDIA's wheels has no version.json); what that nvcc would print as its
    release, without starting it."""
    version_json = home / "version.json"
    if version_json.is_file():
        version = json.loads(version_json.read_text()).get("cuda", {}).get("version")
        if version:
            return {"version": ".".join(version.split(".")[:2]), "source": str(version_json)}
    header = home / "include" / "cuda.h"
    if (home / "bin" / "nvcc").is_file() and header.is_file():
        with header.open("rb") as file:
            match = CUDA_H_VERSION.search(file.read(CUDA_H_READ_BYTES))
        if match:
            major, rest = divmod(int(match.group(1)), 1000)
            return {"version": f"{major}.{rest // 10}", "source": str(header)}
    return None


@functools.lru_cache(maxsize=4)
def _toolkit_version(
    cuda_home: str | None, cuda_path: str | None, path: str | None, default_home: str = DEFAULT_HOME
) -> Any:
    """The toolkit's own files under CUDA_HOME, CUDA_PATH or ``default_home`` where they say
    (no process), else ``nvcc --version`` on PATH, bounded in time. Cached: a toolkit does not
    change under a running process."""
    for home in (cuda_home, cuda_path, default_home):
        found = _home_version(Path(home)) if home else None
        if found:
            return found
    nvcc = shutil.which("nvcc", path=path)
    if not nvcc:
        return None
    try:
        _, out, _ = process.run([nvcc, "--version"], NVCC_TIMEOUT_S)  # no pipe a fork could hold
    except (OSError, TimeoutError) as exc:
        return unavailable(f"nvcc --version failed: {type(exc).__name__}")
    match = re.search(r"release (\d+\.\d+)", out)
    return (
        {"version": match.group(1), "source": "nvcc"}
        if match
        else unavailable("nvcc --version printed no release")
    )


def computed_on(*, cuda_build: bool, initialised: bool, allocated: bool, stage: str) -> Any:
    """``cuda`` or ``cpu``: where this process did its arithmetic, the fact the rest of the
    fingerprint cannot give (a GPU machine with a CUDA torch can still train on the CPU).

    Only a capture at the end of the run can say "cpu" for a CUDA build: before the model moves,
    CUDA is not yet initialised in a run that will use it. CUDA initialised with nothing allocated
    on the current device (``get_device_name`` initialises it) is not computing on it either.
    The device index is left out: ranks of one job use different indices and compute alike.
    """
    if not cuda_build:
        return "cpu"
    if initialised and allocated:
        return "cuda"
    if stage == "end":
        return "cpu"
    return unavailable(f"no CUDA tensor yet when captured ({stage})")


def _computed_on(ctx: ProbeContext) -> Any:
    """Reads torch.cuda only where CUDA is already initialised, and only the current device's
    allocator statistics (no other device gets a context)."""
    torch = ctx.torch
    version = torch.version
    cuda_build = bool(getattr(version, "cuda", None) or getattr(version, "hip", None))
    initialised = cuda_build and bool(torch.cuda.is_initialized())
    allocated = initialised and torch.cuda.max_memory_allocated(torch.cuda.current_device()) > 0
    return computed_on(
        cuda_build=cuda_build, initialised=initialised, allocated=allocated, stage=ctx.run.stage
    )


def probe(ctx: ProbeContext) -> dict[str, Any]:
    toolkit = safe(toolkit_version)
    missing = torch_missing(ctx)
    if missing:
        return {
            "torch_built_with": missing,
            "cudnn_version": missing,
            "nccl_version": missing,
            "toolkit": toolkit,
            "computed_on": missing,
        }
    torch = ctx.torch
    return {
        "torch_built_with": read(torch, "version.cuda"),
        "cudnn_version": format_cudnn(safe(lambda: cudnn_version(torch))),
        "nccl_version": safe(lambda: _nccl_version(torch)),
        "toolkit": toolkit,
        "computed_on": safe(lambda: _computed_on(ctx)),
    }
