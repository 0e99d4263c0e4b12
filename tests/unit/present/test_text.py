"""The text report (``present/text.py``): the one-screen report fits the width it is given,
and the full one shows every difference."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlflow_fingerprint import diff
from mlflow_fingerprint.present.text import render_brief, render_plain
from support.records import cpu_record, edit, seeded, write


@pytest.mark.parametrize("width", [60, 100, 160])
def test_the_brief_report_fits_its_width(tmp_path: Path, width: int) -> None:
    b = edit(seeded(cpu_record(), 1), **{"program.call.note": "x" * 300})
    report = diff(write(tmp_path, "a", seeded(cpu_record(), 0)), write(tmp_path, "b", b))
    text = render_brief(report, width)
    assert report.verdict in text
    assert max(len(line) for line in text.splitlines()) <= width


def test_the_full_report_shows_every_difference(tmp_path: Path) -> None:
    b = edit(seeded(cpu_record(), 1), **{"program.call.note": "changed"})
    report = diff(write(tmp_path, "a", seeded(cpu_record(), 0)), write(tmp_path, "b", b))
    text = render_plain(report, include_none=True)
    assert all(d.field in text for d in report.shown_differences(True))
