"""Which NVML the GPU probe reads (``capture/nvml.py``): a stand-in given by the caller, the
recording ``$MLFLOW_FINGERPRINT_NVML_REPLAY`` names, or the installed pynvml; a replay that cannot
be loaded is one line saying why, never an exception."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from mlflow_fingerprint.capture.nvml import load_nvml
from mlflow_fingerprint.capture.nvml_replay import NvmlReplay
from mlflow_fingerprint.settings import NVML_REPLAY
from support import paths

FIXTURES = paths.FIXTURES / "gpus"


@pytest.fixture(autouse=True)
def _no_replay_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay set in the environment that runs the tests would choose NVML for them."""
    monkeypatch.delenv(NVML_REPLAY, raising=False)


def test_load_nvml_prefers_an_override() -> None:
    replay = NvmlReplay.from_file(FIXTURES / "t4.json")
    assert load_nvml(replay) == (replay, None, "replay:t4.json")
    plain = SimpleNamespace()
    assert load_nvml(plain) == (plain, None, "override")


def test_load_nvml_reads_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NVML_REPLAY, str(FIXTURES / "l4.json"))
    module, error, source = load_nvml()
    assert isinstance(module, NvmlReplay)
    assert (error, source) == (None, "replay:l4.json")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "cannot read {path}: No such file or directory"),
        ("{not json", "{path} is not valid JSON"),
        # a call no replay knows is refused when the recording is loaded, not mid-capture
        ('{"system": {"nvmlDeviceGetName": "H100"}}', "'nvmlDeviceGetName' is not an NVML"),
    ],
)
def test_a_replay_that_cannot_be_loaded_is_one_line_saying_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: str | None, reason: str
) -> None:
    path = tmp_path / "replay.json"
    if content is not None:
        path.write_text(content)
    monkeypatch.setenv(NVML_REPLAY, str(path))
    module, error, source = load_nvml()
    assert (module, source) == (None, "replay:replay.json")
    assert error is not None
    assert error.startswith(f"cannot replay NVML readings ({NVML_REPLAY}): ")
    assert reason.format(path=path) in error
    assert "\n" not in error


def test_the_installed_pynvml_is_the_default_and_its_absence_is_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pynvml

    assert load_nvml() == (pynvml, None, "nvml")
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes ``import pynvml`` raise ImportError
    assert load_nvml() == (None, "nvidia-ml-py is not installed", "nvml")
