"""What every renderer writes alike (``present/common.py``): values, numbers, plurals."""

from __future__ import annotations

import math

from mlflow_fingerprint.model.missing import MISSING
from mlflow_fingerprint.present.common import number, percent, plural, value_text


def test_values_read_as_a_person_reads_them() -> None:
    assert value_text(MISSING) == "absent"
    assert value_text({"unavailable": "timed out"}) == "unavailable"
    assert value_text({"unavailable": "unknown: never read"}) == "unknown"
    assert value_text({"x": [1, 2]}) == '{"x": [1, 2]}'
    long = value_text("word " * 100, limit=20)
    assert len(long) <= 20
    assert long.startswith("word")


def test_numbers_percentages_and_plurals() -> None:
    assert (number(None), number(math.nan), number(0.1 + 0.2)) == ("—", "nan", "0.3")
    assert number(123456789.0) == "1.2345679e+08"
    assert (percent(None), percent(0.0123)) == ("—", "1.23%")
    assert (plural(1, "run"), plural(2, "run"), plural(0, "run")) == ("1 run", "2 runs", "0 runs")
