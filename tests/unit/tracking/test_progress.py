"""The progress line of a long read: on a terminal only, after ``AFTER_S``, cleared at the end,
never where it was turned off (``--quiet``)."""

from __future__ import annotations

import io

from mlflow_fingerprint.tracking import progress as module


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_shows_on_a_terminal_only_and_is_cleared(monkeypatch) -> None:
    monkeypatch.setattr(module, "AFTER_S", 0.0)
    monkeypatch.setattr(module, "EVERY_S", 0.0)
    term, log, off = Terminal(), io.StringIO(), Terminal()
    for stream, enabled in ((term, True), (log, True), (off, False)):
        shown = module.Progress(enabled, stream)
        shown.stage("records", 2)
        shown.add(2)
        shown.close()
    assert "reading records: 2 of 2" in term.getvalue()
    assert term.getvalue().endswith("\r\033[K")
    assert log.getvalue() == off.getvalue() == ""


def test_a_short_read_shows_nothing() -> None:
    term = Terminal()
    shown = module.Progress(True, term)
    shown.stage("runs")
    shown.add(1000)
    shown.close()
    assert term.getvalue() == ""
