"""``present.render`` (``present/__init__.py``): one report in each format, the format asked
for, and an unknown format refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlflow_fingerprint import diff
from mlflow_fingerprint.present import EXTENSIONS, FORMATS, render
from support.records import cpu_record, seeded, write


def test_each_format_is_its_own_and_says_the_same_verdict(tmp_path: Path) -> None:
    report = diff(
        write(tmp_path, "a", seeded(cpu_record(), 0)), write(tmp_path, "b", seeded(cpu_record(), 1))
    )
    assert set(EXTENSIONS) == set(FORMATS)
    shown = {fmt: render(report, fmt) for fmt in FORMATS}
    assert json.loads(shown["json"])["verdict"] == report.verdict
    assert shown["markdown"].startswith(f"### fingerprint diff: **{report.verdict}**")
    assert "<html" in shown["html"].lower()
    assert report.verdict in shown["text"]
    # --all shows every difference, the one-screen text only those that can change results
    assert len(render(report, "text", include_none=True)) >= len(shown["text"])


def test_an_unknown_format_is_refused_by_name(tmp_path: Path) -> None:
    report = diff(write(tmp_path, "a", cpu_record()), write(tmp_path, "b", cpu_record()))
    with pytest.raises(ValueError, match="unknown format 'pdf'"):
        render(report, "pdf")  # type: ignore[arg-type]
