"""The GPU probe, driven through its real code path by replays of recorded NVML readings.

No GPU is reachable from CI, so each fixture in ``tests/fixtures/gpus`` stands in for one machine:
``NvmlReplay`` answers the probe's pynvml calls with the recorded values and raises the real
``pynvml.NVMLError`` subclasses where the recording says a call failed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest
import torch

import mlflow_fingerprint
from mlflow_fingerprint.capture import cuda, gpu
from mlflow_fingerprint.capture.context import ProbeContext, RunInfo
from mlflow_fingerprint.capture.cuda import computed_on
from mlflow_fingerprint.capture.nvml import load_nvml
from mlflow_fingerprint.capture.nvml_replay import (
    CALLS_BY_NAME,
    NvmlReplay,
    record_readings,
)
from mlflow_fingerprint.model.fingerprint import is_unavailable
from mlflow_fingerprint.model.readable import gpu_summary
from mlflow_fingerprint.settings import NVML_REPLAY
from support import paths
from support.records import nvml_recording

FIXTURES = paths.FIXTURES / "gpus"


def context(nvml: Any = None, torch_module: Any = torch) -> ProbeContext:
    """The context ``capture()`` builds, with NVML chosen by the same ``load_nvml``."""
    module, error, source = load_nvml(nvml)
    return ProbeContext(
        torch=torch_module,
        torch_error=None if torch_module is not None else "not importable",
        nvml=module,
        nvml_error=error,
        nvml_source=source,
        cwd=Path.cwd(),
        run=RunInfo(),
    )


def probe_fixture(name: str) -> dict[str, Any]:
    return gpu.probe(context(NvmlReplay.from_file(FIXTURES / name)))


def probe_nvml_recording(rec: dict[str, Any], source_name: str = "inline") -> dict[str, Any]:
    return gpu.probe(context(NvmlReplay(rec, source_name=source_name)))


@pytest.fixture(autouse=True)
def _no_replay_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay left in the environment would silently replace real pynvml in other tests."""
    monkeypatch.delenv(NVML_REPLAY, raising=False)


# -- architecture from compute capability ----------------------------------------------------

# Every row of NVIDIA's compute-capability table (https://developer.nvidia.com/cuda-gpus).
KB_TABLE = [
    ((3, 0), "Kepler"),
    ((3, 2), "Kepler"),
    ((3, 5), "Kepler"),
    ((3, 7), "Kepler"),
    ((5, 0), "Maxwell"),
    ((5, 2), "Maxwell"),
    ((5, 3), "Maxwell"),
    ((6, 0), "Pascal"),
    ((6, 1), "Pascal"),
    ((6, 2), "Pascal"),
    ((7, 0), "Volta"),
    ((7, 2), "Volta"),
    ((7, 5), "Turing"),
    ((8, 0), "Ampere"),
    ((8, 6), "Ampere"),
    ((8, 7), "Ampere"),
    ((8, 9), "Ada"),
    ((9, 0), "Hopper"),
    ((10, 0), "Blackwell"),
    ((10, 3), "Blackwell"),
    ((11, 0), "Blackwell"),
    ((12, 0), "Blackwell"),
    ((12, 1), "Blackwell"),
]


@pytest.mark.parametrize(("capability", "architecture"), KB_TABLE)
def test_architecture_from_capability_covers_the_kb_table(
    capability: tuple[int, int], architecture: str
) -> None:
    assert gpu.architecture_from_capability(*capability) == architecture


@pytest.mark.parametrize(
    ("capability", "expected"), [((13, 0), "Unknown (sm_130)"), ((7, 1), "Unknown (sm_71)")]
)
def test_unknown_capability_is_named_not_guessed(
    capability: tuple[int, int], expected: str
) -> None:
    assert gpu.architecture_from_capability(*capability) == expected


def test_nvml_arch_constants_match_pynvml() -> None:
    for code, name in gpu.ARCH_BY_NVML_CONST.items():
        assert getattr(pynvml, f"NVML_DEVICE_ARCH_{name.upper()}") == code


def test_cores_per_sm_known_for_every_known_capability() -> None:
    assert set(gpu.CORES_PER_SM) == set(gpu.ARCH_BY_CAPABILITY)


# -- each recorded GPU -------------------------------------------------------------------------

# fixture: (name, compute capability, architecture, SMs, memory MiB, driver)
EXPECTED = {
    "h100.json": ("NVIDIA H100 80GB HBM3", "9.0", "Hopper", 132, 81559, "580.159.04"),
    "h100_real.json": ("NVIDIA H100 80GB HBM3", "9.0", "Hopper", 132, 81559, "580.159.04"),
    "h200.json": ("NVIDIA H200", "9.0", "Hopper", 132, 143771, "580.159.03"),
    "a100.json": ("NVIDIA A100-SXM4-80GB", "8.0", "Ampere", 108, 81920, "535.183.01"),
    "v100.json": ("Tesla V100-SXM2-16GB", "7.0", "Volta", 80, 16160, "550.163.01"),
    "t4.json": ("Tesla T4", "7.5", "Turing", 40, 15360, "535.183.01"),
    "l4.json": ("NVIDIA L4", "8.9", "Ada", 58, 23034, "550.90.07"),
    "rtx3090.json": ("NVIDIA GeForce RTX 3090", "8.6", "Ampere", 82, 24576, "550.120"),
}


def test_every_fixture_is_covered_and_states_its_provenance() -> None:
    names = {p.name for p in FIXTURES.glob("*.json")}
    assert names == {*EXPECTED, "a100_mig.json", "no_driver.json"}
    for name in names:
        provenance = nvml_recording(name)["recorded_from"]
        assert provenance.startswith(("real machine", "NVIDIA specifications")), name


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_fixture_replays_to_the_right_device(fixture: str) -> None:
    name, capability, architecture, sm_count, memory_mib, driver = EXPECTED[fixture]
    section = probe_fixture(fixture)
    assert section["source"] == f"replay:{fixture}"
    assert section["driver_version"] == driver
    assert section["device_count"] == 1
    (device,) = section["devices"]
    assert device["index"] == 0
    assert device["name"] == name
    assert device["compute_capability"] == capability
    assert device["architecture"] == architecture
    assert device["sm_count"] == sm_count
    assert device["memory_total_mib"] == memory_mib


def test_h100_replay() -> None:
    section = probe_fixture("h100.json")
    device = section["devices"][0]
    assert device["architecture"] == "Hopper"
    assert device["compute_capability"] == "9.0"
    assert device["sm_count"] == 132
    assert section["driver_version"] == "580.159.04"
    assert section["cuda_driver_version"] == "13.0"
    assert section["nvml_version"] == "13.580.159.04"
    assert device["mig_mode"] == "disabled"
    assert device["ecc_mode"] == "enabled"
    assert section["visible_devices"] is None


def test_uuid_reaches_the_section_only_as_a_digest() -> None:
    uuid = nvml_recording("h100.json")["devices"][0]["nvmlDeviceGetUUID"]
    section = probe_fixture("h100.json")
    assert section["devices"][0]["uuid_digest"] == hashlib.sha256(uuid.encode()).hexdigest()[:12]
    assert uuid not in json.dumps(section)


def test_h100_and_h200_differ_only_in_name_memory_driver() -> None:
    h100, h200 = probe_fixture("h100.json"), probe_fixture("h200.json")
    changed = {k for k in h100 if h100[k] != h200[k]}
    assert changed == {"source", "driver_version", "nvml_version", "devices"}
    d100, d200 = h100["devices"][0], h200["devices"][0]
    assert {k for k in d100 if d100[k] != d200[k]} == {"name", "memory_total_mib", "uuid_digest"}


def real_h100_capture() -> dict[str, Any]:
    """The GPU section capture read through the real NVML of an H100 (tests/jobs/gpu_truth)."""
    measured = json.loads((paths.FIXTURES / "gpu_runs" / "h100_measured.json").read_text())
    return measured["capture_check"]["gpu_real"]


def without(section: dict[str, Any], *device_keys: str) -> dict[str, Any]:
    out = {k: v for k, v in section.items() if k != "source"}
    out["devices"] = [{k: v for k, v in d.items() if k not in device_keys} for d in out["devices"]]
    return out


def test_the_real_h100s_recording_replays_to_what_capture_read_on_it() -> None:
    """Recorded and captured on the same machine, in the same run of record.py: the replay must
    give the section the real NVML gave, but for the made-up UUID's digest."""
    real, replayed = real_h100_capture(), probe_fixture("h100_real.json")
    assert real["source"] == "nvml"
    assert without(replayed, "uuid_digest") == without(real, "uuid_digest")
    uuid = nvml_recording("h100_real.json")["devices"][0]["nvmlDeviceGetUUID"]
    assert replayed["devices"][0]["uuid_digest"] == hashlib.sha256(uuid.encode()).hexdigest()[:12]


def test_the_h100_fixture_written_from_specifications_differs_from_the_real_one_only_in_power() -> (
    None
):
    """The first H100 fixture was filled in from NVIDIA's specifications (its "notes"); the real
    machine confirmed every reading it has, and added the power limit it lacked."""
    written, real = probe_fixture("h100.json"), probe_fixture("h100_real.json")
    assert without(written, "uuid_digest", "power_limit_w") == without(
        real, "uuid_digest", "power_limit_w"
    )
    assert is_unavailable(written["devices"][0]["power_limit_w"])
    assert real["devices"][0]["power_limit_w"] == 700


def test_visible_devices_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert probe_fixture("h100.json")["visible_devices"] == "0"


# -- partial and total failures ----------------------------------------------------------------


def test_not_supported_call_gives_one_unavailable_field_and_keeps_the_rest() -> None:
    device = probe_fixture("rtx3090.json")["devices"][0]
    assert device["ecc_mode"] == {"unavailable": "NVML nvmlDeviceGetEccMode: Not Supported"}
    assert device["architecture"] == "Ampere"
    assert device["sm_count"] == 82
    assert device["memory_total_mib"] == 24576


def test_every_field_degrades_alone() -> None:
    """Fail each device call of the H100 recording in turn: the section must still come back."""
    for call in nvml_recording("h100.json")["devices"][0]:
        rec = nvml_recording("h100.json")
        rec["devices"][0][call] = {"error": "Unknown"}
        device = probe_nvml_recording(rec)["devices"][0]
        assert device["name"] == (
            "NVIDIA H100 80GB HBM3"
            if call != "nvmlDeviceGetName"
            else {"unavailable": "NVML nvmlDeviceGetName: Unknown Error"}
        )
        assert device["architecture"] == "Hopper", call  # from the capability or NVML's const


# The GPU power limit: a field added after every fixture was recorded. No fixture has a reading
# of it (none was re-recorded by hand), so each replays it as not recorded; the readings below
# are test inputs added to a copy of the H100 recording.
POWER_CALL = "nvmlDeviceGetPowerManagementLimit"


@pytest.mark.parametrize(("milliwatts", "watts"), [(700000, 700), (312500, 312.5)])
def test_power_limit_is_recorded_in_watts(milliwatts: int, watts: float) -> None:
    rec = nvml_recording("h100.json")
    rec["devices"][0][POWER_CALL] = milliwatts
    assert probe_nvml_recording(rec)["devices"][0]["power_limit_w"] == watts
    again = record_readings(NvmlReplay(copy.deepcopy(rec)), recorded_from=rec["recorded_from"])
    assert again["devices"][0][POWER_CALL] == milliwatts


@pytest.mark.parametrize("fixture", sorted(set(EXPECTED) - {"h100_real.json"}))
def test_a_fixture_recorded_before_the_power_limit_replays_it_as_unavailable(fixture: str) -> None:
    assert POWER_CALL not in nvml_recording(fixture)["devices"][0]
    device = probe_fixture(fixture)["devices"][0]
    assert device["power_limit_w"] == {
        "unavailable": f"NVML {POWER_CALL}: Not Supported (not in this recording)"
    }
    assert device["name"] == EXPECTED[fixture][0]  # the rest of the device is untouched


def test_a_gpu_that_refuses_the_power_limit_says_so() -> None:
    rec = nvml_recording("h100.json")
    rec["devices"][0][POWER_CALL] = {"error": "NotSupported"}
    device = probe_nvml_recording(rec)["devices"][0]
    assert device["power_limit_w"] == {"unavailable": f"NVML {POWER_CALL}: Not Supported"}


def test_architecture_falls_back_to_nvml_constant_without_capability() -> None:
    rec = nvml_recording("h100.json")
    rec["devices"][0]["nvmlDeviceGetCudaComputeCapability"] = {"error": "NotSupported"}
    device = probe_nvml_recording(rec)["devices"][0]
    assert is_unavailable(device["compute_capability"])
    assert device["architecture"] == "Hopper"
    assert is_unavailable(device["sm_count"])  # cores per SM depend on the capability


def test_sm_count_prefers_nvml_attributes_where_served() -> None:
    rec = nvml_recording("h100.json")
    rec["devices"][0]["nvmlDeviceGetAttributes"] = {"multiprocessorCount": 114}
    assert probe_nvml_recording(rec)["devices"][0]["sm_count"] == 114


def test_cuda_driver_version_falls_back_to_v1() -> None:
    rec = nvml_recording("h100.json")
    rec["system"]["nvmlSystemGetCudaDriverVersion_v2"] = {"error": "LibraryNotFound"}
    rec["system"]["nvmlSystemGetCudaDriverVersion"] = 12040
    assert probe_nvml_recording(rec)["cuda_driver_version"] == "12.4"


def test_mig_enabled_a100_lists_its_slices() -> None:
    device = probe_fixture("a100_mig.json")["devices"][0]
    assert device["mig_mode"] == "enabled"
    assert device["architecture"] == "Ampere"
    assert is_unavailable(device["sm_count"])  # NVML gives no core count on a MIG-enabled GPU
    assert [m["sm_count"] for m in device["mig_devices"]] == [42, 42]
    assert [m["memory_total_mib"] for m in device["mig_devices"]] == [40192, 40192]


def test_no_driver_makes_the_whole_section_unavailable() -> None:
    section = probe_fixture("no_driver.json")
    assert section == {"unavailable": "no NVIDIA driver (NVML: NVML Shared Library Not Found)"}


def test_other_init_failure_says_what_failed() -> None:
    section = probe_nvml_recording({"init_error": "NoPermission", "devices": []})
    assert section == {
        "unavailable": "NVML could not start (NVMLError_NoPermission: Insufficient Permissions)"
    }


def test_real_pynvml_without_a_gpu_gives_a_section_not_an_exception() -> None:
    """CI has no NVIDIA driver, so real pynvml fails to load libnvidia-ml; on a GPU machine the
    same call reads real devices. Either way the probe returns a record."""
    ctx = context()
    assert ctx.nvml is pynvml
    assert ctx.nvml_source == "nvml"
    section = gpu.probe(ctx)
    if is_unavailable(section):
        assert section["unavailable"].startswith(("no NVIDIA driver", "NVML could not start"))
    else:
        assert all(isinstance(d["architecture"], str) for d in section["devices"])


def test_probe_shuts_nvml_down() -> None:
    replay = NvmlReplay.from_file(FIXTURES / "h100.json")
    gpu.probe(context(replay))
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        replay.nvmlDeviceGetCount()


# -- torch's view, never by initialising CUDA ------------------------------------------------


def test_torch_devices_not_read_while_cuda_is_uninitialised() -> None:
    assert probe_fixture("h100.json")["torch_devices"] == {"unavailable": gpu.NOT_INITIALISED}


def test_torch_devices_read_once_cuda_is_initialised() -> None:
    props = SimpleNamespace(
        name="NVIDIA H100 80GB HBM3",
        major=9,
        minor=0,
        multi_processor_count=132,
        total_memory=81559 * 1024 * 1024,
    )
    fake_cuda = SimpleNamespace(
        is_initialized=lambda: True, device_count=lambda: 1, get_device_properties=lambda i: props
    )
    ctx = context(NvmlReplay.from_file(FIXTURES / "h100.json"), SimpleNamespace(cuda=fake_cuda))
    assert gpu.probe(ctx)["torch_devices"] == [
        {
            "index": 0,
            "name": "NVIDIA H100 80GB HBM3",
            "compute_capability": "9.0",
            "sm_count": 132,
            "memory_total_mib": 81559,
        }
    ]


def test_capture_never_initialises_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every torch.cuda call that creates a context goes through ``_lazy_init``; spy on it."""
    calls: list[str] = []

    def spy() -> None:
        calls.append("torch.cuda._lazy_init")
        raise AssertionError("capture initialised CUDA")

    monkeypatch.setattr(torch.cuda, "_lazy_init", spy)
    monkeypatch.setattr(torch.cuda, "init", spy)
    fp = mlflow_fingerprint.capture(nvml=NvmlReplay.from_file(FIXTURES / "h100.json"))
    assert calls == []
    assert not torch.cuda.is_initialized()
    assert fp.get("gpu.devices.0.architecture") == "Hopper"


def test_cudnn_version_is_asked_of_torch_only_once_cuda_is_initialised() -> None:
    """On an H100 with torch 2.11, ``torch.backends.cudnn.version()`` initialised CUDA in a
    process that had not (tests/jobs/gpu_truth, stage cuda_init). A CUDA build of torch whose
    cuDNN reading does that: capture must not ask it until the program has initialised CUDA."""
    state = {"initialised": False, "asked": 0}

    def version() -> int:
        state["asked"] += 1
        state["initialised"] = True
        return 91900

    cuda_torch = SimpleNamespace(
        version=SimpleNamespace(cuda="13.0"),
        cuda=SimpleNamespace(is_initialized=lambda: state["initialised"]),
        backends=SimpleNamespace(cudnn=SimpleNamespace(version=version)),
    )
    before = cuda.cudnn_version(cuda_torch)
    assert state == {"initialised": False, "asked": 0}
    assert is_unavailable(before)  # this CPU process has no libcudnn loaded to ask instead
    state["initialised"] = True  # the program moved its model to the GPU
    assert cuda.format_cudnn(cuda.cudnn_version(cuda_torch)) == "9.19.0"
    assert state["asked"] == 1


def test_a_cpu_build_of_torch_has_no_cudnn_version() -> None:
    assert cuda.cudnn_version(torch) is None


# -- through capture() and the CLI -------------------------------------------------------------


def test_capture_with_h100_replay() -> None:
    fp = mlflow_fingerprint.capture(nvml=NvmlReplay.from_file(FIXTURES / "h100.json"))
    assert fp.get("gpu.source") == "replay:h100.json"
    assert fp.get("gpu.devices.0.architecture") == "Hopper"
    assert fp.get("gpu.devices.0.compute_capability") == "9.0"
    assert fp.get("gpu.devices.0.sm_count") == 132
    assert fp.get("gpu.driver_version") == "580.159.04"
    assert gpu_summary(fp["gpu"]) == "NVIDIA H100 80GB HBM3 x1 (Hopper, sm_90)"


def test_capture_with_h100_vs_h200_changes_the_env_hash() -> None:
    h100 = mlflow_fingerprint.capture(nvml=NvmlReplay.from_file(FIXTURES / "h100.json"))
    h200 = mlflow_fingerprint.capture(nvml=NvmlReplay.from_file(FIXTURES / "h200.json"))
    assert h100.hashes["env"] != h200.hashes["env"]


def test_capture_cuts_a_hung_nvml_init() -> None:
    rec = {**nvml_recording("h100.json"), "init_delay_s": 5}
    start = time.monotonic()
    fp = mlflow_fingerprint.capture(nvml=NvmlReplay(rec, source_name="hung"), timeout_s=0.5)
    assert time.monotonic() - start < 4
    assert "timed out" in fp["gpu"]["unavailable"]


# -- NVML absent -------------------------------------------------------------------------------


def test_the_probe_without_pynvml_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes ``import pynvml`` raise ImportError
    assert gpu.probe(context()) == {
        "unavailable": "NVML not available (nvidia-ml-py is not installed)"
    }


# -- the replay as the probe reads it (the replay itself: test_nvml_replay.py) -----------------


def test_a_call_missing_from_a_recording_replays_as_not_supported() -> None:
    """How a fixture recorded before a call joined the table answers it: NVML's NotSupported,
    saying it was not recorded, so the probe records the field as unavailable."""
    rec = nvml_recording("h100.json")
    del rec["devices"][0]["nvmlDeviceGetEccMode"]
    del rec["system"]["nvmlSystemGetNVMLVersion"]
    replay = NvmlReplay(rec)
    replay.nvmlInit()
    with pytest.raises(pynvml.NVMLError_NotSupported, match="not in this recording"):
        replay.nvmlDeviceGetEccMode(replay.nvmlDeviceGetHandleByIndex(0))
    replay.nvmlShutdown()
    section = probe_nvml_recording(rec)
    reason = "Not Supported (not in this recording)"
    assert section["devices"][0]["ecc_mode"] == {
        "unavailable": f"NVML nvmlDeviceGetEccMode: {reason}"
    }
    assert section["nvml_version"] == {"unavailable": f"NVML nvmlSystemGetNVMLVersion: {reason}"}
    assert section["devices"][0]["architecture"] == "Hopper"


def test_the_replay_answers_every_call_the_probe_makes() -> None:
    """The probe asks NVML only for calls in the replay's table (a call missing there would make
    every replay record it as "not in this NVML binding"). Every fixture, plus one whose device
    calls all fail, so that each fallback path is taken too."""
    asked: set[str] = set()

    class Spy:
        def __init__(self, replay: NvmlReplay) -> None:
            self.replay = replay

        def __getattr__(self, name: str) -> Any:
            asked.add(name)
            return getattr(self.replay, name)

    failing = nvml_recording("h100.json")
    failing["system"] = {call: {"error": "Unknown"} for call in failing["system"]}
    failing["devices"][0] = {call: {"error": "Unknown"} for call in failing["devices"][0]}
    replays = [NvmlReplay.from_file(path) for path in sorted(FIXTURES.glob("*.json"))]
    for replay in [*replays, NvmlReplay(failing)]:
        section = gpu.probe(context(Spy(replay)))
        assert "not in this NVML binding" not in json.dumps(section)
    handles_and_lifecycle = {
        "nvmlInit",
        "nvmlShutdown",
        "nvmlDeviceGetCount",
        "nvmlDeviceGetHandleByIndex",
        "nvmlDeviceGetMigDeviceHandleByIndex",
    }
    assert {n for n in asked if n.startswith("nvml")} - handles_and_lifecycle <= set(CALLS_BY_NAME)
    assert set(CALLS_BY_NAME) <= asked  # and the table holds no call the probe never makes


# -- the one-line summary ----------------------------------------------------------------------


def test_summary_of_mixed_models() -> None:
    h100 = nvml_recording("h100.json")["devices"][0]
    l4 = nvml_recording("l4.json")["devices"][0]
    rec = {**nvml_recording("h100.json"), "devices": [h100, h100, l4]}
    assert gpu_summary(probe_nvml_recording(rec)) == (
        "NVIDIA H100 80GB HBM3 x2 (Hopper, sm_90) + NVIDIA L4 x1 (Ada, sm_89)"
    )


def test_summary_marks_mig() -> None:
    assert gpu_summary(probe_fixture("a100_mig.json")) == (
        "NVIDIA A100-SXM4-80GB x1 (Ampere, sm_80, MIG)"
    )


@pytest.mark.parametrize(
    "section",
    [
        {"unavailable": "no NVIDIA driver (NVML: NVML Shared Library Not Found)"},
        {"devices": []},
        {"devices": {"unavailable": "NVML nvmlDeviceGetCount: Unknown Error"}},
    ],
)
def test_summary_is_none_without_a_readable_gpu(section: dict[str, Any]) -> None:
    assert gpu_summary(section) == "none"


@pytest.mark.parametrize(
    ("cuda_build", "initialised", "allocated", "stage", "expected"),
    [
        (False, False, False, "start", "cpu"),  # a CPU torch build: nothing else was possible
        (True, True, True, "first_batch", "cuda"),
        (True, True, True, "end", "cuda"),
        (True, False, False, "end", "cpu"),  # the run ended without touching CUDA
        (True, True, False, "end", "cpu"),  # get_device_name() initialised it; nothing computed
        (True, False, False, "start", None),  # the model has not moved yet: unknown
        (True, True, False, "first_batch", None),
    ],
)
def test_where_a_run_computed_is_claimed_only_when_the_capture_can_know(
    cuda_build: bool, initialised: bool, allocated: bool, stage: str, expected: str | None
) -> None:
    found = computed_on(
        cuda_build=cuda_build, initialised=initialised, allocated=allocated, stage=stage
    )
    if expected is None:
        assert is_unavailable(found)
        assert stage in found["unavailable"]
    else:
        assert found == expected


def test_this_cpu_torch_build_records_that_it_computed_on_the_cpu() -> None:
    """The real read, never initialising CUDA (the GPU branch needs a GPU: see README Limits)."""
    assert torch.version.cuda is None, "this check is for the CPU wheel CI installs"
    assert mlflow_fingerprint.capture().get("cuda.computed_on") == "cpu"
    assert not torch.cuda.is_initialized()
