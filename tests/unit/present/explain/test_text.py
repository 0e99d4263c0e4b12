"""The explain report on one screen (``present/explain/text.py``): plain, and with colours."""

from __future__ import annotations

from mlflow_fingerprint.present.explain.text import render_plain, render_rich
from support.explanation import sample


def test_the_plain_report_ranks_the_fields_and_names_what_was_ruled_out() -> None:
    text = render_plain(sample())
    assert text.startswith("fingerprint explain sweep: val_loss (final value) over 6 runs")
    (row,) = [line for line in text.splitlines() if line.startswith("1  ")]
    assert row.split()[1:4] == ["program.call.lr", "80%", "70%–90%"]
    assert "important" in row
    assert "Ruled out (within the noise" in text
    assert text.rstrip().endswith("Left out: 1 run (1 no val_loss).")
    assert "  - run-odd (g1, z +4.2, 1.3): fingerprint diff run-odd run-a" in text
    assert "\x1b[" not in text


def test_the_rich_report_says_the_same_in_colour() -> None:
    text = render_rich(sample())
    assert "\x1b[" in text
    assert "program.call.lr" in text
    assert "fingerprint diff run-odd run-a" in text
