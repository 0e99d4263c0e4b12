"""The knowledge base shipped in the package (``knowledge/__init__.py``): the rows a citation
names are the first cells of the table rows, never a header."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlflow_fingerprint import knowledge


def test_the_shipped_table_has_rows_and_no_header() -> None:
    rows = knowledge.rows()
    assert rows
    assert all(row and "|" not in row for row in rows)
    assert knowledge.text().count("\n| ") >= len(rows)


def test_a_header_row_is_no_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = "| field | effect |\n|---|---|\n| seeds.requested | randomness |\n| x | y |\n"
    monkeypatch.setattr(knowledge, "text", lambda name=knowledge.DETERMINISM: page)
    assert knowledge.rows() == frozenset({"seeds.requested", "x"})
