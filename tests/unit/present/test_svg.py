"""One metric's curves as SVG (``present/svg.py``): both curves drawn, the first divergence
marked where there is one, a single value a dot, nothing finite a sentence."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

from mlflow_fingerprint.compare.metrics import compare
from mlflow_fingerprint.present.svg import chart
from mlflow_fingerprint.tracking.history import History

SVG = "{http://www.w3.org/2000/svg}"


def h(values: list[float]) -> History:
    return History(np.arange(len(values), dtype=np.int64), np.asarray(values, dtype=np.float64))


def test_two_curves_and_the_divergence_are_drawn() -> None:
    metric = compare("loss", h([2.0, 1.5, 1.0, 0.8]), h([2.0, 1.5, 1.1, 0.9]))
    svg = ET.fromstring(chart(metric, "run <a>", "run b"))  # well-formed: labels are escaped
    assert len(svg.findall(f"{SVG}polyline")) == 2
    (line,) = svg.findall(f"{SVG}line")
    assert line.get("class") == "divergence"
    assert metric.first_divergence_step == 2


def test_one_value_is_a_dot_and_no_finite_value_a_sentence() -> None:
    dot = ET.fromstring(chart(compare("acc", h([0.5]), h([0.5])), "a", "b"))
    assert len(dot.findall(f"{SVG}circle")) == 2
    assert dot.findall(f"{SVG}line") == []
    nothing = chart(compare("acc", h([math.nan]), h([math.inf])), "a", "b")
    assert nothing == "<p>No finite values of acc to draw.</p>"
