"""A stand-in for ``pynvml`` that replays NVML readings recorded on a real GPU.

There is no GPU in CI, yet the GPU probe must be exercised through the very code a user runs.
:class:`NvmlReplay` exposes the pynvml functions the probe calls, under the same names and with
the same signatures, returns the recorded values and raises the real ``pynvml.NVMLError``
subclasses where the recording says a call failed. :func:`record_readings` produces such a
recording from the real pynvml, so a machine that has a GPU can add a fixture:

    python -m mlflow_fingerprint.capture.nvml_replay > tests/fixtures/gpus/<gpu>.json

Recording format (JSON)::

    {"recorded_from": "...",                       # provenance, free text
     "init_error": "LibraryNotFound",              # optional: nvmlInit raises this
     "init_delay_s": 5,                            # optional: nvmlInit sleeps first (a hung driver)
     "system": {"nvmlSystemGetDriverVersion": "580.159.04", ...},
     "devices": [{"nvmlDeviceGetName": "...", "nvmlDeviceGetEccMode": {"error": "NotSupported"},
                  "mig_devices": [{...same keys, for each MIG device handle...}]}]}

A call absent from the recording raises ``NVMLError_FunctionNotFound``: it was not recorded, and
the probe must cope with a driver that lacks it just the same.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml

from ..errors import ReplayError

SYSTEM_CALLS: tuple[str, ...] = (
    "nvmlSystemGetDriverVersion",
    "nvmlSystemGetCudaDriverVersion",
    "nvmlSystemGetCudaDriverVersion_v2",
    "nvmlSystemGetNVMLVersion",
)

# Calls that take a device handle; MIG device handles are recorded with the same list.
DEVICE_CALLS: tuple[str, ...] = (
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetCudaComputeCapability",
    "nvmlDeviceGetArchitecture",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetEccMode",
    "nvmlDeviceGetNumGpuCores",
    "nvmlDeviceGetAttributes",
    "nvmlDeviceGetMaxMigDeviceCount",
)

# Readings that pynvml returns as ctypes structures; the probe reads them by attribute.
STRUCT_CALLS: frozenset[str] = frozenset({"nvmlDeviceGetMemoryInfo", "nvmlDeviceGetAttributes"})


def nvml_error(name: str) -> pynvml.NVMLError:
    """The real pynvml exception for an error name such as ``"NotSupported"``."""
    cls = getattr(pynvml, f"NVMLError_{name}", None)
    if not (isinstance(cls, type) and issubclass(cls, pynvml.NVMLError)):
        raise ReplayError(f"unknown NVML error name {name!r}")
    return cls()


def _recorded_error(value: Any) -> str | None:
    if isinstance(value, Mapping) and set(value) == {"error"}:
        return str(value["error"])
    return None


def _check_errors(node: Any, where: str) -> None:
    """Fail at load time, not mid-test, on a misspelt error name anywhere in a recording."""
    name = _recorded_error(node)
    if name is not None:
        nvml_error(name)
    elif isinstance(node, Mapping):
        for key, value in node.items():
            _check_errors(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _check_errors(value, f"{where}.{i}")


class ReplayHandle:
    """An opaque device handle, as pynvml's ``c_nvmlDevice_t`` is to its caller."""

    def __init__(self, readings: Mapping[str, Any], label: str) -> None:
        self.readings = readings
        self.label = label

    def __repr__(self) -> str:
        return f"<ReplayHandle {self.label}>"


class NvmlReplay:
    """Replays one recording; every method mirrors the pynvml function of the same name."""

    def __init__(self, recording: Mapping[str, Any], source_name: str = "inline") -> None:
        if not isinstance(recording, Mapping):
            raise ReplayError("an NVML recording must be a JSON object")
        devices = recording.get("devices", [])
        if not isinstance(devices, list) or not all(isinstance(d, Mapping) for d in devices):
            raise ReplayError("'devices' must be a list of objects")
        if not isinstance(recording.get("system", {}), Mapping):
            raise ReplayError("'system' must be an object")
        _check_errors(recording, "recording")
        self.recording = recording
        self.source_name = source_name
        self._init_count = 0
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path) -> NvmlReplay:
        """Load a recording; any failure is a one-line :class:`ReplayError`."""
        p = Path(path)
        try:
            recording = json.loads(p.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ReplayError(f"cannot read {p}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ReplayError(f"{p} is not valid JSON ({exc})") from None
        return cls(recording, source_name=p.name)

    # -- library lifecycle ------------------------------------------------------------------

    def nvmlInit(self) -> None:
        delay = float(self.recording.get("init_delay_s", 0))
        if delay > 0:
            time.sleep(delay)
        error = self.recording.get("init_error")
        if error:
            raise nvml_error(str(error))
        with self._lock:
            self._init_count += 1

    def nvmlShutdown(self) -> None:
        with self._lock:
            if self._init_count == 0:
                raise nvml_error("Uninitialized")
            self._init_count -= 1

    # -- system queries ---------------------------------------------------------------------

    def nvmlSystemGetDriverVersion(self) -> str:
        return self._system("nvmlSystemGetDriverVersion")

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return self._system("nvmlSystemGetCudaDriverVersion")

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return self._system("nvmlSystemGetCudaDriverVersion_v2")

    def nvmlSystemGetNVMLVersion(self) -> str:
        return self._system("nvmlSystemGetNVMLVersion")

    # -- device enumeration -----------------------------------------------------------------

    def nvmlDeviceGetCount(self) -> int:
        self._require_init()
        return len(self.recording.get("devices", []))

    def nvmlDeviceGetHandleByIndex(self, index: int) -> ReplayHandle:
        self._require_init()
        devices = self.recording.get("devices", [])
        if not 0 <= index < len(devices):
            raise nvml_error("InvalidArgument")
        return ReplayHandle(devices[index], f"device {index}")

    def nvmlDeviceGetMigDeviceHandleByIndex(self, device: ReplayHandle, index: int) -> ReplayHandle:
        self._require_init()
        migs = device.readings.get("mig_devices", [])
        if not 0 <= index < len(migs):
            raise nvml_error("NotFound")  # what NVML says for an empty MIG slot
        return ReplayHandle(migs[index], f"{device.label} MIG {index}")

    # -- device queries ---------------------------------------------------------------------

    def nvmlDeviceGetName(self, handle: ReplayHandle) -> str:
        return self._device(handle, "nvmlDeviceGetName")

    def nvmlDeviceGetUUID(self, handle: ReplayHandle) -> str:
        return self._device(handle, "nvmlDeviceGetUUID")

    def nvmlDeviceGetCudaComputeCapability(self, handle: ReplayHandle) -> tuple[int, int]:
        major, minor = self._device(handle, "nvmlDeviceGetCudaComputeCapability")
        return (int(major), int(minor))

    def nvmlDeviceGetArchitecture(self, device: ReplayHandle) -> int:
        return self._device(device, "nvmlDeviceGetArchitecture")

    def nvmlDeviceGetMemoryInfo(self, handle: ReplayHandle, version: Any = None) -> SimpleNamespace:
        return self._device(handle, "nvmlDeviceGetMemoryInfo")

    def nvmlDeviceGetMigMode(self, device: ReplayHandle) -> list[int]:
        return list(self._device(device, "nvmlDeviceGetMigMode"))

    def nvmlDeviceGetEccMode(self, handle: ReplayHandle) -> list[int]:
        return list(self._device(handle, "nvmlDeviceGetEccMode"))

    def nvmlDeviceGetNumGpuCores(self, device: ReplayHandle) -> int:
        return self._device(device, "nvmlDeviceGetNumGpuCores")

    def nvmlDeviceGetAttributes(self, device: ReplayHandle) -> SimpleNamespace:
        return self._device(device, "nvmlDeviceGetAttributes")

    def nvmlDeviceGetMaxMigDeviceCount(self, device: ReplayHandle) -> int:
        return self._device(device, "nvmlDeviceGetMaxMigDeviceCount")

    # -- helpers ----------------------------------------------------------------------------

    def _require_init(self) -> None:
        if self._init_count == 0:
            raise nvml_error("Uninitialized")

    def _system(self, call: str) -> Any:
        self._require_init()
        return _replay(self.recording.get("system", {}), call)

    def _device(self, handle: ReplayHandle, call: str) -> Any:
        self._require_init()
        if not isinstance(handle, ReplayHandle):
            raise nvml_error("InvalidArgument")
        return _replay(handle.readings, call)


def _replay(readings: Mapping[str, Any], call: str) -> Any:
    """The recorded value of ``call``, or the recorded NVML error raised."""
    if call not in readings:
        raise nvml_error("FunctionNotFound")
    value = readings[call]
    error = _recorded_error(value)
    if error is not None:
        raise nvml_error(error)
    if call in STRUCT_CALLS:
        return SimpleNamespace(**value)
    return value


# -- recording ------------------------------------------------------------------------------


def _to_json(value: Any) -> Any:
    """A pynvml return value as plain JSON: structures (ctypes, or a replay's) become objects."""
    fields = getattr(value, "_fields_", None)
    if fields is not None:
        return {name: _to_json(getattr(value, name)) for name, *_ in fields}
    if isinstance(value, SimpleNamespace):
        return {name: _to_json(v) for name, v in vars(value).items()}
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, list | tuple):
        return [_to_json(v) for v in value]
    return value


def _error_name(exc: pynvml.NVMLError) -> str:
    return type(exc).__name__.removeprefix("NVMLError_")


def _record_calls(nvml: Any, calls: Sequence[str], *args: Any) -> dict[str, Any]:
    readings: dict[str, Any] = {}
    for call in calls:
        fn: Callable[..., Any] | None = getattr(nvml, call, None)
        if fn is None:
            continue  # this pynvml has no such function: leave it unrecorded
        try:
            readings[call] = _to_json(fn(*args))
        except pynvml.NVMLError as exc:
            readings[call] = {"error": _error_name(exc)}
    return readings


def _record_migs(nvml: Any, handle: Any, max_count: Any) -> list[dict[str, Any]]:
    migs = []
    for i in range(max_count if isinstance(max_count, int) else 0):
        try:
            mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, i)
        except pynvml.NVMLError:
            continue  # an empty MIG slot
        migs.append(_record_calls(nvml, DEVICE_CALLS, mig))
    return migs


def record_readings(nvml: Any = pynvml, recorded_from: str | None = None) -> dict[str, Any]:
    """Everything the GPU probe reads, from a pynvml-like module, as a replayable recording.

    The UUIDs are real here: only their digests reach a fingerprint, but a fixture committed to a
    repository should have them replaced by made-up ones.
    """
    when = datetime.now(timezone.utc).date().isoformat()
    recording: dict[str, Any] = {"recorded_from": recorded_from or f"real machine, {when}"}
    try:
        nvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return {**recording, "init_error": _error_name(exc), "system": {}, "devices": []}
    try:
        recording["system"] = _record_calls(nvml, SYSTEM_CALLS)
        devices = []
        for i in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(i)
            readings = _record_calls(nvml, DEVICE_CALLS, handle)
            migs = _record_migs(nvml, handle, readings.get("nvmlDeviceGetMaxMigDeviceCount"))
            if migs:
                readings["mig_devices"] = migs
            devices.append(readings)
        recording["devices"] = devices
    finally:
        nvml.nvmlShutdown()
    return recording


if __name__ == "__main__":
    json.dump(record_readings(), sys.stdout, indent=2)
    sys.stdout.write("\n")
