"""The explain report's inline SVG charts (``present/explain/charts.py``)."""

from __future__ import annotations

import dataclasses
import re

from mlflow_fingerprint.present.explain.charts import PALETTE, colour, stacked, strip
from mlflow_fingerprint.present.explain.words import Segment
from support.explanation import LR


def test_the_stacked_bar_is_a_segment_per_share_drawn_to_scale() -> None:
    svg = stacked([Segment("a", 0.75, "factor", 0.75), Segment("noise", 0.25, "noise", 0.25)])
    widths = [
        float(w) for w in re.findall(r'class="segment" x="[\d.]+" y="\d+" width="([\d.]+)"', svg)
    ]
    assert widths == [525.0, 175.0]  # of a 700 px bar
    assert "<title>a: 75%</title>" in svg
    assert colour("factor", 8) == PALETTE[1]
    assert colour("noise", 0) == "#8c8c8c"


def test_a_strip_has_a_dot_per_run_and_escapes_the_values() -> None:
    svg = strip(LR, 0.9, 2.1, 0)
    assert svg.count('class="run"') == 6
    assert svg.count("n=3") == 2
    hostile = dataclasses.replace(LR, label="<x>")
    assert 'aria-label="&lt;x&gt;"' in strip(hostile, 0.9, 2.1, 0)
