"""``fingerprint audit`` (``cli/cmd_audit.py``): a recorded run's threats, worst first, each with
its fix and source, then what passed; JSON is the audit itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlflow_fingerprint.audit import audit
from mlflow_fingerprint.cli import cmd_audit
from mlflow_fingerprint.cli.main import build_parser
from support.records import cpu_record, edit, write


def test_a_record_s_threats_are_numbered_with_fix_and_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = edit(cpu_record(), **{"seeds.requested": None})
    path = write(tmp_path, "unseeded", record)
    assert cmd_audit.run(build_parser().parse_args(["audit", path])) == 0
    out = capsys.readouterr().out
    found = audit(record)
    assert found.findings  # an unseeded run is a threat
    said = " ".join(out.split())  # lines are fitted to the terminal's width
    assert said.startswith(f"{len(found.findings)} threat(s) to reproducibility in {path}")
    assert all(f.finding in said for f in found.findings)
    assert out.count("   fix: ") == len(found.findings)
    assert "\npassed:\n" in out
    assert "not checked" not in out  # a recorded run has its program's checks


def test_json_is_the_audit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "cpu", cpu_record())
    assert cmd_audit.run(build_parser().parse_args(["audit", path, "--format", "json"])) == 0
    assert json.loads(capsys.readouterr().out) == audit(cpu_record()).to_dict()


def test_nothing_found_says_so_and_what_was_not_checked() -> None:
    clean = audit(cpu_record())
    empty = type(clean)((), clean.passed, ("seeds", "loaders"))
    text = cmd_audit.text(empty, "this environment")
    assert text.startswith("No threats to reproducibility found in this environment.")
    assert "not checked (seeds, loaders): a training program sets them" in " ".join(text.split())
