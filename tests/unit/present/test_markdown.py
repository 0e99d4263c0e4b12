"""The Markdown report (``present/markdown.py``): one table row per difference shown, whatever
a value holds (a ``|`` in a value is no extra column)."""

from __future__ import annotations

from pathlib import Path

from mlflow_fingerprint import diff
from mlflow_fingerprint.present.markdown import render, table
from support.records import cpu_record, edit, seeded, write


def test_a_row_per_difference_and_a_pipe_in_a_value_is_no_column(tmp_path: Path) -> None:
    a = seeded(cpu_record(), 0)
    b = edit(seeded(cpu_record(), 1), **{"program.call.note": "a | b | c"})
    report = diff(write(tmp_path, "a", a), write(tmp_path, "b", b))
    text = render(report, include_none=True)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    header, *body = rows[: 1 + len(report.shown_differences(True))]
    assert header == "| # | field | A | B | effect | why |"
    assert len(body) == len(report.shown_differences(True))
    cells = header.count(" | ")
    assert all(row.replace("\\|", "").count(" | ") == cells for row in body)


def test_table_is_a_header_a_rule_and_its_rows() -> None:
    assert table(("x", "y"), [("1", "2")]) == ["| x | y |", "|---|---|", "| 1 | 2 |"]
