"""The MLflow description line (``present/description.py``): the verdict and the most likely
cause in one short line, every name escaped for the Markdown the MLflow UI renders."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlflow_fingerprint import diff
from mlflow_fingerprint.present.description import description
from support.records import cpu_record, seeded, write


def test_the_line_names_the_verdict_and_the_most_likely_cause(tmp_path: Path) -> None:
    report = diff(
        write(tmp_path, "a", seeded(cpu_record(), 0)), write(tmp_path, "b", seeded(cpu_record(), 1))
    )
    line = description(report)
    assert "\n" not in line
    assert line.startswith("mlflow-fingerprint: vs run ")
    assert f": {report.verdict}; most likely {report.effective_differences[0].field} (" in line


def test_no_difference_names_no_cause_and_a_name_stays_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "[click](x)", cpu_record())
    report = diff("[click](x).json", write(tmp_path, "b", cpu_record()))
    line = description(report)
    assert line.endswith(f": {report.verdict}")
    assert "most likely" not in line
    assert "click" in line
    assert "[click](x)" not in line  # escaped: MLflow shows it as text, not as a link
