"""Tuning variables: a value that does not parse falls back to its default with one warning, and
never breaks ``import mlflow`` (our run context provider is loaded by it) or ``start_run``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import mlflow_fingerprint
from mlflow_fingerprint.errors import FingerprintWarning
from mlflow_fingerprint.settings import DEFAULT_DIFF_CAP_BYTES, Settings, settings


def test_valid_values_are_read() -> None:
    got = settings(
        {
            "MLFLOW_FINGERPRINT_PROBE_TIMEOUT": "2.5",
            "MLFLOW_FINGERPRINT_GATHER_TIMEOUT": "30",
            "MLFLOW_FINGERPRINT_GIT_DIFF": "1000",
            "MLFLOW_FINGERPRINT_DISABLE": "yes",
        }
    )
    assert got == Settings(2.5, 30.0, "redacted", 1000, True)
    assert settings({"MLFLOW_FINGERPRINT_GIT_DIFF": "off"}).git_diff == "off"
    assert settings({}) == Settings()
    assert settings({"MLFLOW_FINGERPRINT_GIT_DIFF": "Redacted"}).git_diff_cap_bytes == (
        DEFAULT_DIFF_CAP_BYTES
    )
    assert settings({"MLFLOW_FINGERPRINT_WATCH_STEPS": " 20, 21,"}).watch_steps == (20, 21)
    assert settings({"MLFLOW_FINGERPRINT_WATCH_STEPS": ""}).watch_steps == ()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("MLFLOW_FINGERPRINT_PROBE_TIMEOUT", "10s"),
        ("MLFLOW_FINGERPRINT_PROBE_TIMEOUT", "nan"),
        ("MLFLOW_FINGERPRINT_PROBE_TIMEOUT", "-1"),
        ("MLFLOW_FINGERPRINT_GATHER_TIMEOUT", "2m"),
        ("MLFLOW_FINGERPRINT_GIT_DIFF", "redact"),
        ("MLFLOW_FINGERPRINT_GIT_DIFF", "-5"),
        ("MLFLOW_FINGERPRINT_DISABLE", "maybe"),
        ("MLFLOW_FINGERPRINT_WATCH_STEPS", "20;21"),
        ("MLFLOW_FINGERPRINT_WATCH_STEPS", "-3"),
        ("MLFLOW_FINGERPRINT_WATCH_STEPS", "1.5"),
    ],
)
def test_a_bad_value_falls_back_with_one_warning(name: str, text: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = settings({name: text})
        second = settings({name: text})
    assert first == second == Settings()
    messages = [str(w.message) for w in caught if w.category is FingerprintWarning]
    assert len(messages) == 1, messages
    assert name in messages[0]
    assert repr(text) in messages[0]


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


@pytest.mark.slow
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
