"""One entry for every format of the explain report (``present/explain/__init__.py``)."""

from __future__ import annotations

import json

import pytest

from mlflow_fingerprint.present.explain import pieces, render
from support.explanation import sample


def test_each_format_is_its_own_and_json_is_the_result_itself() -> None:
    report = sample()
    assert json.loads(render(report, "json")) == json.loads(json.dumps(report.to_dict()))
    assert render(report, "markdown").startswith("### ")
    assert render(report, "html").lstrip().lower().startswith("<!doctype html>")
    assert render(report, "text").startswith("fingerprint explain sweep")
    assert "\x1b[" in render(report, "text", rich=True)


@pytest.mark.parametrize("fmt", ["json", "markdown", "html", "text"])
def test_the_pieces_are_the_report_and_json_s_own_text(fmt) -> None:
    """What the command writes piece by piece is the rendered report: for JSON, the text
    ``json.dumps(..., indent=2)`` writes, in more than one piece."""
    report = sample()
    written = list(pieces(report, fmt))  # type: ignore[arg-type]
    assert "".join(written) == render(report, fmt)  # type: ignore[arg-type]
    if fmt == "json":
        assert len(written) > 2
        assert "".join(written) == json.dumps(report.to_dict(), indent=2) + "\n"


def test_an_unknown_format_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown format 'pdf'"):
        render(sample(), "pdf")  # type: ignore[arg-type]
