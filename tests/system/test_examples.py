"""Each scenario script of examples/ trains its pair for real and its diff names what it changed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlflow_fingerprint import layout
from support.diff_text import assert_setting_ranked_first, verdict
from support.paths import ROOT

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
    assert_setting_ranked_first(out.stdout, field)
    assert verdict(out.stdout) in verdicts, out.stdout


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


DEMO_URL = re.compile(
    r"^  http://127\.0\.0\.1:5000/#/experiments/(\d+)/runs/([0-9a-f]{32})"
    r"\?workflowType=machine_learning$",
    re.M,
)


def test_demo_piped_is_clean_and_leaves_the_report_in_run_b(tmp_path: Path) -> None:
    """``make demo | tee log``: no MLflow INFO lines, no carriage returns, one line per run,
    the A-vs-B report stored in run B, and the address of run B's page in the UI."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["MLFLOW_FINGERPRINT_SPOOL"] = str(tmp_path / "spool")
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")],
        cwd=tmp_path,  # MLflow's default store: ./mlflow.db
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:]
    text = out.stdout
    assert "\r" not in text
    for noise in (" INFO ", "alembic", "Creating initial MLflow database tables"):
        assert noise not in text, noise
    runs = re.findall(r"^  training (\S+): digits\.py .* \.\.\. done in \d+s$", text, re.M)
    assert runs == ["A", "A-again", "B"], text
    experiment_id, run_id = DEMO_URL.search(text).groups()
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = client.get_run(run_id)
    assert run.info.run_name == "B"
    assert run.info.experiment_id == experiment_id
    kind = client.get_experiment(experiment_id).tags[layout.MLFLOW_EXPERIMENT_KIND]
    assert kind == layout.EXPERIMENT_KIND_TRAINING
    (report,) = client.list_artifacts(run_id, layout.REPORT_DIR)
    assert report.path.endswith(f"_vs_{run_id[:12]}.html")
    assert f"report stored in run {run_id} as {report.path}" in text
    assert "--backend-store-uri sqlite:///mlflow.db --port 5000" in text
