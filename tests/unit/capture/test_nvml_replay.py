"""The NVML stand-in (``capture/nvml_replay.py``): the recordings of real GPUs in
``tests/fixtures/gpus`` replayed through pynvml's own names and exceptions, recorded back to the
same JSON, and a recording that could only replay wrongly refused when it is loaded. How the GPU
probe reads a replay is ``test_gpu.py``'s."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pynvml
import pytest

from mlflow_fingerprint.capture.nvml_replay import (
    CALLS,
    CALLS_BY_NAME,
    NvmlReplay,
    ReplayError,
    nvml_error,
    record_readings,
)
from support import paths
from support.records import nvml_recording

FIXTURES = paths.FIXTURES / "gpus"


def test_replay_raises_the_real_pynvml_errors() -> None:
    replay = NvmlReplay.from_file(FIXTURES / "rtx3090.json")
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        replay.nvmlDeviceGetCount()
    replay.nvmlInit()
    handle = replay.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        replay.nvmlDeviceGetEccMode(handle)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        replay.nvmlDeviceGetHandleByIndex(1)
    assert replay.nvmlDeviceGetMemoryInfo(handle).total == 24576 * 1024 * 1024
    replay.nvmlShutdown()


def test_replay_rejects_a_misspelt_error_name() -> None:
    rec = nvml_recording("h100.json")
    rec["devices"][0]["nvmlDeviceGetEccMode"] = {"error": "NotSuported"}
    with pytest.raises(ReplayError, match="NotSuported"):
        NvmlReplay(rec)


@pytest.mark.parametrize(
    ("where", "key"),
    [("device", "nvmlDeviceGetEccMod"), ("system", "nvmlDeviceGetName"), ("mig", "nvmlGetName")],
)
def test_replay_rejects_a_reading_no_call_takes(where: str, key: str) -> None:
    """A misspelt call name would otherwise replay, silently, as not recorded."""
    rec = nvml_recording("a100_mig.json")
    readings = {
        "device": rec["devices"][0],
        "system": rec["system"],
        "mig": rec["devices"][0]["mig_devices"][1],
    }[where]
    readings[key] = 1
    with pytest.raises(ReplayError, match=key):
        NvmlReplay(rec)


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.json")))
def test_recorder_reproduces_each_fixture(fixture: str) -> None:
    """Recording a replay gives the fixture back: the recorder and the replay speak one format,
    so a fixture recorded on a real GPU replays exactly."""
    rec = nvml_recording(fixture)
    again = record_readings(NvmlReplay(copy.deepcopy(rec)), recorded_from=rec["recorded_from"])
    # A call the fixture lacks (a MIG handle's name, a call added after it was recorded) stays
    # absent: re-recording a replay never turns "not recorded" into a reading.
    assert again == {k: v for k, v in rec.items() if k not in ("notes",)}


def test_the_table_names_each_call_once_and_only_pynvml_s_own_functions() -> None:
    assert len(CALLS_BY_NAME) == len(CALLS)
    assert all(callable(getattr(pynvml, call.name, None)) for call in CALLS)
    replay = NvmlReplay(nvml_recording("h100.json"))
    with pytest.raises(AttributeError, match="has no NVML call 'nvmlDeviceGetFanSpeed'"):
        replay.nvmlDeviceGetFanSpeed  # noqa: B018
    assert isinstance(nvml_error("NotFound"), pynvml.NVMLError_NotFound)
    with pytest.raises(ReplayError, match="unknown NVML error name 'Nope'"):
        nvml_error("Nope")


def test_readings_come_back_in_the_types_pynvml_returns() -> None:
    replay = NvmlReplay.from_file(FIXTURES / "h100.json")
    assert replay.source_name == "h100.json"
    replay.nvmlInit()
    handle = replay.nvmlDeviceGetHandleByIndex(0)
    assert replay.nvmlDeviceGetCudaComputeCapability(handle) == (9, 0)
    assert replay.nvmlDeviceGetMemoryInfo(handle, 2).total > 0  # a structure, by attribute
    assert replay.nvmlSystemGetDriverVersion() == "580.159.04"
    assert repr(handle) == "<ReplayHandle device 0>"
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        replay.nvmlDeviceGetName("not a handle")
    replay.nvmlShutdown()
    with pytest.raises(pynvml.NVMLError_Uninitialized):  # one shutdown per init
        replay.nvmlShutdown()


def test_mig_slices_replay_by_index_and_an_empty_slot_is_not_found() -> None:
    replay = NvmlReplay.from_file(FIXTURES / "a100_mig.json")
    replay.nvmlInit()
    device = replay.nvmlDeviceGetHandleByIndex(0)
    migs = nvml_recording("a100_mig.json")["devices"][0]["mig_devices"]
    for i, readings in enumerate(migs):
        handle = replay.nvmlDeviceGetMigDeviceHandleByIndex(device, i)
        assert repr(handle) == f"<ReplayHandle device 0 MIG {i}>"
        assert handle.readings == readings
    with pytest.raises(pynvml.NVMLError_NotFound):
        replay.nvmlDeviceGetMigDeviceHandleByIndex(device, len(migs))
    replay.nvmlShutdown()


def test_a_machine_whose_driver_fails_to_load_is_recorded_as_such() -> None:
    replay = NvmlReplay.from_file(FIXTURES / "no_driver.json")
    with pytest.raises(pynvml.NVMLError_LibraryNotFound):
        replay.nvmlInit()
    again = record_readings(replay, recorded_from="test")
    assert again == {
        "recorded_from": "test", "init_error": "LibraryNotFound", "system": {}, "devices": []
    }  # fmt: skip


@pytest.mark.parametrize(
    ("recording_", "message"),
    [
        ([], "an NVML recording must be a JSON object"),
        ({"devices": {}}, "'devices' must be a list of objects"),
        ({"devices": [1]}, "'devices' must be a list of objects"),
        ({"system": []}, "'system' must be an object"),
        ({"devices": [{"mig_devices": {}}]}, "devices.0.mig_devices must be a list of objects"),
    ],
)
def test_a_recording_of_the_wrong_shape_is_refused(recording_: Any, message: str) -> None:
    with pytest.raises(ReplayError, match=message):
        NvmlReplay(recording_)


def test_a_file_that_is_no_recording_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match=r"cannot read .*gone\.json: No such file or directory"):
        NvmlReplay.from_file(tmp_path / "gone.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ReplayError, match=r"bad\.json is not valid JSON") as raised:
        NvmlReplay.from_file(bad)
    assert "\n" not in str(raised.value)
