"""``audit``: what a record lets vary, worst first, and what only a program decides."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.audit import PROGRAM_CHECKS, Finding, audit
from support.records import cpu_record, edit, seeded


def test_an_unseeded_dirty_cpu_run_is_reported_worst_first() -> None:
    result = audit(cpu_record())
    checks = [f.check for f in result.findings]
    assert checks[0] == "seeds"
    assert {"seeds", "git", "pythonhashseed", "deterministic_algorithms"} <= set(checks)
    severities = [f.severity for f in result.findings]
    assert severities == sorted(severities, key=["high", "medium", "low"].index)
    assert any(line.startswith("cudnn_benchmark: no GPU run") for line in result.passed)


def test_fixing_a_finding_moves_it_to_passed() -> None:
    fixed = edit(seeded(cpu_record(), 0), **{"seeds.pythonhashseed": "0", "git.dirty": False})
    result = audit(fixed)
    checks = {f.check for f in result.findings}
    assert not {"seeds", "git", "pythonhashseed"} & checks
    assert "seeds: seeded with 0" in result.passed
    assert "pythonhashseed: PYTHONHASHSEED=0" in result.passed


def test_environment_only_names_the_program_checks_it_skipped() -> None:
    result = audit(cpu_record(), environment_only=True)
    assert result.not_checked == tuple(c.__name__ for c in PROGRAM_CHECKS)
    assert "seeds" not in {f.check for f in result.findings}
    assert result.to_dict()["not_checked"] == list(result.not_checked)


def test_a_finding_with_an_unknown_severity_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown severity"):
        Finding("x", "severe", "numerics", "f", "fix", "s")  # type: ignore[arg-type]
