"""A bad MLFLOW_FINGERPRINT_* value never breaks importing mlflow or starting a run, in a fresh
process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mlflow_fingerprint


def run_python(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    src = str(Path(mlflow_fingerprint.__file__).resolve().parents[1])
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, "PYTHONPATH": src, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


START_RUN = """
    import mlflow
    from mlflow_fingerprint.capture.core import capture

    mlflow.set_experiment("settings")
    with mlflow.start_run() as run:
        mlflow.log_param("lr", 0.1)
    stored = mlflow.get_run(run.info.run_id)
    kind = "fingerprinted" if "fingerprint.hash" in stored.data.tags else "plain"
    print(kind, stored.info.status)
"""


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"MLFLOW_FINGERPRINT_PROBE_TIMEOUT": "10s"}, "fingerprinted"),
        ({"MLFLOW_FINGERPRINT_GATHER_TIMEOUT": "forever"}, "fingerprinted"),
        ({"MLFLOW_FINGERPRINT_GIT_DIFF": "some"}, "fingerprinted"),
        ({"MLFLOW_FINGERPRINT_PROBE_TIMEOUT": "10s", "MLFLOW_FINGERPRINT_DISABLE": "1"}, "plain"),
    ],
)
def test_import_mlflow_and_start_run_survive_a_bad_value(
    env: dict[str, str], expected: str, tmp_path: Path, mlflow_db_template: Path
) -> None:
    db = tmp_path / "mlflow.db"
    shutil.copyfile(mlflow_db_template, db)
    env = {
        **env,
        "MLFLOW_TRACKING_URI": f"sqlite:///{db}",
        "MLFLOW_FINGERPRINT_SPOOL": str(db.parent),
    }
    imported = run_python("import mlflow; print('imported')", env, tmp_path)
    assert imported.stdout.strip() == "imported", imported.stderr
    assert "Traceback" not in imported.stderr
    started = run_python(START_RUN, env, tmp_path)
    assert "Traceback" not in started.stderr, started.stderr
    assert started.stdout.strip().splitlines()[-1] == f"{expected} FINISHED", started.stderr
    if expected == "fingerprinted":
        [bad] = [k for k in env if k.endswith(("TIMEOUT", "GIT_DIFF"))]
        assert started.stderr.count(bad) == 1, started.stderr  # one warning
