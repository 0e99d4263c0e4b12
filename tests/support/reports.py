"""Reading a ``diff`` report in the rules' unit tests: the difference a field made."""

from __future__ import annotations

from mlflow_fingerprint.compare.report import Difference, Report


def effect_of(report: Report, field: str) -> Difference:
    found = [d for d in report.differences if d.field == field]
    assert found, f"{field} not among {[d.field for d in report.differences]}"
    return found[0]
