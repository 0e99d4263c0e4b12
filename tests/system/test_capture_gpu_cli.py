"""``fingerprint capture`` as a process, with NVML replayed from a recorded GPU
(MLFLOW_FINGERPRINT_NVML_REPLAY)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mlflow_fingerprint.settings import NVML_REPLAY
from support import paths

FIXTURES = paths.FIXTURES / "gpus"


def run_cli(replay: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, NVML_REPLAY: replay}
    # The console script a user runs, installed beside this interpreter.
    cli = [str(Path(sys.executable).with_name("fingerprint")), "capture", "--format", "json"]
    return subprocess.run(cli, env=env, capture_output=True, text=True, timeout=180, check=False)


def test_cli_capture_replays_the_env_var_fixture() -> None:
    done = run_cli(str(FIXTURES / "h100.json"))
    assert done.returncode == 0, done.stderr
    section = json.loads(done.stdout)["gpu"]
    assert section["source"] == "replay:h100.json"
    assert section["devices"][0]["architecture"] == "Hopper"
    assert section["devices"][0]["sm_count"] == 132
    assert section["driver_version"] == "580.159.04"


def test_cli_capture_with_a_missing_replay_file_reports_it(tmp_path: Path) -> None:
    done = run_cli(str(tmp_path / "absent.json"))
    assert done.returncode == 0, done.stderr
    reason = json.loads(done.stdout)["gpu"]["unavailable"]
    assert "cannot replay NVML readings" in reason
    assert "absent.json" in reason
