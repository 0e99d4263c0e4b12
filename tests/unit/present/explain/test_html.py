"""The explain report as one self-contained HTML file (``present/explain/html.py``)."""

from __future__ import annotations

import dataclasses

from mlflow_fingerprint.present.explain.html import render
from support.explanation import sample


def test_the_page_holds_both_charts_and_loads_nothing() -> None:
    page = render(sample())
    assert page.count("<svg") == 2  # the split of the variance, the important field's strip
    assert "program.call.lr" in page
    assert "fingerprint diff run-odd run-a" in page
    assert "<script" not in page
    assert 'src="http' not in page
    assert "<link" not in page


def test_every_value_from_a_run_is_escaped() -> None:
    page = render(dataclasses.replace(sample(), experiment="<b>sweep</b>"))
    assert "<b>sweep" not in page
    assert "&lt;b&gt;sweep" in page
