"""Each scenario script of examples/ trains its pair for real and its diff names what it changed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# script -> (the field the diff must rank first, the verdict it must reach)
SCENARIOS = {
    "scenario_seed.py": ("seeds.requested", {"explained"}),
    "scenario_lr.py": ("program.options.lr", {"explained"}),
    "scenario_workers.py": ("data.loaders.0.num_workers", {"explained"}),
    "scenario_batch_size.py": ("data.loaders.0.batch_size", {"explained"}),
    "scenario_world_size.py": ("distributed.world_size", {"explained"}),
    # CPU kernels are deterministic either way, so the losses usually agree.
    "scenario_deterministic.py": (
        "determinism.deterministic_algorithms",
        {"same_results", "explained"},
    ),
}
TOP = re.compile(r"^1\s+(\S+)", re.M)
VERDICT = re.compile(r"^verdict: (\w+)", re.M)


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SCENARIOS))
def test_scenario_names_its_setting_first(script: str, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
        "MLFLOW_FINGERPRINT_SPOOL": str(tmp_path / "spool"),
    }
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    field, verdicts = SCENARIOS[script]
    assert TOP.search(out.stdout).group(1) == field, out.stdout
    assert VERDICT.search(out.stdout).group(1) in verdicts, out.stdout


@pytest.mark.slow
def test_tf32_scenario_without_a_gpu_diffs_recorded_gpus(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "scenario_tf32.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    a100, v100 = out.stdout.split("$ fingerprint diff v100")
    assert TOP.search(a100).group(1) == "numerics.fp32_precision.cuda_matmul"
    assert "No differences that can change results." in v100
