"""A stand-in for ``pynvml`` that replays NVML readings recorded on a real GPU.

There is no GPU in CI, yet the GPU probe must be exercised through the very code a user runs.
:class:`NvmlReplay` exposes the pynvml functions the probe calls, under the same names and with
the same signatures, returns the recorded values and raises the real ``pynvml.NVMLError``
subclasses where the recording says a call failed. :func:`record_readings` produces such a
recording from the real pynvml, so a machine that has a GPU can add a fixture:

    python -m mlflow_fingerprint.capture.nvml_replay > tests/fixtures/gpus/<gpu>.json

Both dispatch over one table, :data:`CALLS`: the recorder records each call in it, the replay
answers each by name. Adding an NVML reading to the probe is one entry there.

Recording format (JSON)::

    {"recorded_from": "...",                       # provenance, free text
     "init_error": "LibraryNotFound",              # optional: nvmlInit raises this
     "init_delay_s": 5,                            # optional: nvmlInit sleeps first (a hung driver)
     "system": {"nvmlSystemGetDriverVersion": "580.159.04", ...},
     "devices": [{"nvmlDeviceGetName": "...", "nvmlDeviceGetEccMode": {"error": "NotSupported"},
                  "mig_devices": [{...same keys, for each MIG device handle...}]}]}

A call absent from a recording replays as NVML's NotSupported (:class:`NotRecorded`, whose
message says it was not recorded), so recordings made before a call was added keep working and
the probe records that field as unavailable. A key that names no call in :data:`CALLS` is
refused when the recording is loaded.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import pynvml

from ..errors import ReplayError

Scope = Literal["system", "device"]


def _as_recorded(value: Any) -> Any:
    return value


def _structure(value: Mapping[str, Any]) -> SimpleNamespace:
    """pynvml returns a ctypes structure here, which the probe reads by attribute."""
    return SimpleNamespace(**value)


def _int_pair(value: Any) -> tuple[int, int]:
    first, second = value
    return int(first), int(second)


@dataclass(frozen=True)
class NvmlCall:
    """One pynvml function the GPU probe calls: recorded by :func:`record_readings`, answered by
    :class:`NvmlReplay`. ``system`` calls take no argument; ``device`` calls take a device (or
    MIG device) handle. ``shape`` turns the recorded JSON back into the type pynvml returns."""

    name: str
    scope: Scope
    shape: Callable[[Any], Any] = _as_recorded


# Every reading the probe takes, in recording order. A new NVML field is one entry here (and its
# reading in capture/gpu.py); recordings made before it replay it as NotSupported (NotRecorded).
CALLS: tuple[NvmlCall, ...] = (
    NvmlCall("nvmlSystemGetDriverVersion", "system"),
    NvmlCall("nvmlSystemGetCudaDriverVersion", "system"),
    NvmlCall("nvmlSystemGetCudaDriverVersion_v2", "system"),
    NvmlCall("nvmlSystemGetNVMLVersion", "system"),
    NvmlCall("nvmlDeviceGetName", "device"),
    NvmlCall("nvmlDeviceGetUUID", "device"),
    NvmlCall("nvmlDeviceGetCudaComputeCapability", "device", _int_pair),
    NvmlCall("nvmlDeviceGetArchitecture", "device"),
    NvmlCall("nvmlDeviceGetMemoryInfo", "device", _structure),
    NvmlCall("nvmlDeviceGetMigMode", "device", list),
    NvmlCall("nvmlDeviceGetEccMode", "device", list),
    NvmlCall("nvmlDeviceGetNumGpuCores", "device"),
    NvmlCall("nvmlDeviceGetAttributes", "device", _structure),
    NvmlCall("nvmlDeviceGetMaxMigDeviceCount", "device"),
    NvmlCall("nvmlDeviceGetPowerManagementLimit", "device"),
)

CALLS_BY_NAME: dict[str, NvmlCall] = {call.name: call for call in CALLS}

# Keys of a device's readings that are not calls: the readings of its MIG device handles.
MIG_KEY = "mig_devices"


class NotRecorded(pynvml.NVMLError_NotSupported):
    """A call the recording lacks, raised as NVML's NotSupported so the probe records the field
    as unavailable. A recording made before a call joined :data:`CALLS` thus keeps replaying
    (there may be no GPU left to record it again on), and the reason says it was not recorded
    rather than claiming the GPU refused."""

    def __str__(self) -> str:
        return f"{super().__str__()} (not in this recording)"


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


def _check_calls(readings: Mapping[str, Any], scope: Scope, where: str) -> None:
    """Fail at load time on a reading no call of :data:`CALLS` takes: a misspelt call name would
    otherwise replay, silently, as not recorded."""
    for key in readings:
        if scope == "device" and key == MIG_KEY:
            migs = readings[key]
            if not isinstance(migs, list) or not all(isinstance(m, Mapping) for m in migs):
                raise ReplayError(f"{where}.{MIG_KEY} must be a list of objects")
            for i, mig in enumerate(migs):
                _check_calls(mig, "device", f"{where}.{MIG_KEY}.{i}")
            continue
        call = CALLS_BY_NAME.get(key)
        if call is None or call.scope != scope:
            raise ReplayError(f"{where}: {key!r} is not an NVML {scope} call the replay knows")


def _answer(call: NvmlCall, readings: Mapping[str, Any]) -> Any:
    """The recorded value of ``call``, the recorded NVML error raised, or NotRecorded."""
    if call.name not in readings:
        raise NotRecorded()
    value = readings[call.name]
    error = _recorded_error(value)
    if error is not None:
        raise nvml_error(error)
    return call.shape(value)


class ReplayHandle:
    """An opaque device handle, as pynvml's ``c_nvmlDevice_t`` is to its caller."""

    def __init__(self, readings: Mapping[str, Any], label: str) -> None:
        self.readings = readings
        self.label = label

    def __repr__(self) -> str:
        return f"<ReplayHandle {self.label}>"


class NvmlReplay:
    """Replays one recording: the pynvml functions of :data:`CALLS` by their names, answered from
    the recording, plus the library lifecycle and the handle lookups, which are methods."""

    def __init__(self, recording: Mapping[str, Any], source_name: str = "inline") -> None:
        if not isinstance(recording, Mapping):
            raise ReplayError("an NVML recording must be a JSON object")
        devices = recording.get("devices", [])
        if not isinstance(devices, list) or not all(isinstance(d, Mapping) for d in devices):
            raise ReplayError("'devices' must be a list of objects")
        system = recording.get("system", {})
        if not isinstance(system, Mapping):
            raise ReplayError("'system' must be an object")
        _check_calls(system, "system", "system")
        for i, device in enumerate(devices):
            _check_calls(device, "device", f"devices.{i}")
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

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """A recorded call of :data:`CALLS`; any other name is missing, as a function is from an
        older pynvml (the probe then records that it is not in this binding).

        A device call's arguments after the handle (``nvmlDeviceGetMemoryInfo``'s structure
        version) do not change what was recorded, so they are accepted and not used.
        """
        call = CALLS_BY_NAME.get(name)
        if call is None:
            raise AttributeError(f"{type(self).__name__} has no NVML call {name!r}")
        if call.scope == "system":
            return lambda: _answer(call, self._system_readings())
        return lambda handle, *_options: _answer(call, self._device_readings(handle))

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
        migs = self._device_readings(device).get(MIG_KEY, [])
        if not 0 <= index < len(migs):
            raise nvml_error("NotFound")  # what NVML says for an empty MIG slot
        return ReplayHandle(migs[index], f"{device.label} MIG {index}")

    # -- helpers ----------------------------------------------------------------------------

    def _require_init(self) -> None:
        if self._init_count == 0:
            raise nvml_error("Uninitialized")

    def _system_readings(self) -> Mapping[str, Any]:
        self._require_init()
        return self.recording.get("system", {})

    def _device_readings(self, handle: Any) -> Mapping[str, Any]:
        self._require_init()
        if not isinstance(handle, ReplayHandle):
            raise nvml_error("InvalidArgument")
        return handle.readings


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


def _record_calls(nvml: Any, scope: Scope, *args: Any) -> dict[str, Any]:
    readings: dict[str, Any] = {}
    for call in (c for c in CALLS if c.scope == scope):
        fn: Callable[..., Any] | None = getattr(nvml, call.name, None)
        if fn is None:
            continue  # this pynvml has no such function: leave it unrecorded
        try:
            readings[call.name] = _to_json(fn(*args))
        except NotRecorded:
            continue  # re-recording a replay: what it lacked stays absent
        except pynvml.NVMLError as exc:
            readings[call.name] = {"error": _error_name(exc)}
    return readings


def _record_migs(nvml: Any, handle: Any, max_count: Any) -> list[dict[str, Any]]:
    migs = []
    for i in range(max_count if isinstance(max_count, int) else 0):
        try:
            mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, i)
        except pynvml.NVMLError:
            continue  # an empty MIG slot
        migs.append(_record_calls(nvml, "device", mig))
    return migs


def record_readings(nvml: Any = pynvml, recorded_from: str | None = None) -> dict[str, Any]:
    """Everything the GPU probe reads, from a pynvml-like module, as a replayable recording.

    The UUIDs are real here: only their digests reach a fingerprint, but a fixture committed to a
    repository should have them replaced by made-up ones.
    """
    when = datetime.now(UTC).date().isoformat()
    recording: dict[str, Any] = {"recorded_from": recorded_from or f"real machine, {when}"}
    try:
        nvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return {**recording, "init_error": _error_name(exc), "system": {}, "devices": []}
    try:
        recording["system"] = _record_calls(nvml, "system")
        devices = []
        for i in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(i)
            readings = _record_calls(nvml, "device", handle)
            migs = _record_migs(nvml, handle, readings.get("nvmlDeviceGetMaxMigDeviceCount"))
            if migs:
                readings[MIG_KEY] = migs
            devices.append(readings)
        recording["devices"] = devices
    finally:
        nvml.nvmlShutdown()
    return recording


if __name__ == "__main__":
    json.dump(record_readings(), sys.stdout, indent=2)
    sys.stdout.write("\n")
