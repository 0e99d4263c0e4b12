"""Tuning variables: a value that does not parse falls back to its default with one warning, and
never breaks ``import mlflow`` (our run context provider is loaded by it) or ``start_run``."""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

import pytest

from mlflow_fingerprint.errors import FingerprintWarning
from mlflow_fingerprint.settings import DEFAULT_DIFF_CAP_BYTES, Settings, settings, spool_root


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


def test_every_variable_of_the_package_is_declared_in_settings() -> None:
    """A name ``MLFLOW_FINGERPRINT_*`` spelled as a whole string anywhere in ``src/`` but
    ``settings.py`` is a tuning variable declared out of sight (issue 49): the docs, the
    volatile list and a reader looking for what the package reads all start from settings."""
    import mlflow_fingerprint
    from mlflow_fingerprint import settings as declared

    name = re.compile(r"MLFLOW_FINGERPRINT_[A-Z0-9_]+")
    package = Path(mlflow_fingerprint.__file__).parent
    outside = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "settings.py" and path.parent == package:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and name.fullmatch(text):
                outside.append(f"{path.relative_to(package)}:{node.lineno} {text}")
    assert outside == []
    values = {v for v in vars(declared).values() if isinstance(v, str) and name.fullmatch(v)}
    assert {"MLFLOW_FINGERPRINT_SPOOL", "MLFLOW_FINGERPRINT_NVML_REPLAY"} <= values


def test_the_spool_root_is_the_environment_variable_else_the_user_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(tmp_path / "s"))
    assert spool_root() == tmp_path / "s"
    monkeypatch.delenv("MLFLOW_FINGERPRINT_SPOOL")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert spool_root() == tmp_path / ".cache" / "mlflow-fingerprint" / "spool"
