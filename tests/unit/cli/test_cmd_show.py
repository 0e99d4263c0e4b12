"""``fingerprint show`` (``cli/cmd_show.py``): a record file as its summary under its path, or
as the record itself, with what the file lacks said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlflow_fingerprint.cli import cmd_show
from mlflow_fingerprint.cli.main import build_parser
from mlflow_fingerprint.model.fingerprint import Fingerprint
from mlflow_fingerprint.present.summary import summary_text
from support.records import cpu_record, write


def test_a_file_is_its_summary_under_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "cpu", cpu_record())
    assert cmd_show.run(build_parser().parse_args(["show", path])) == 0
    head, *rest = capsys.readouterr().out.rstrip("\n").split("\n")
    assert head == path
    assert "\n".join(rest) == summary_text(Fingerprint.from_dict(cpu_record()))


def test_json_is_the_record_and_output_goes_to_the_file_named(tmp_path: Path) -> None:
    path = write(tmp_path, "cpu", cpu_record())
    out = tmp_path / "shown.json"
    args = build_parser().parse_args(["show", path, "--format", "json", "-o", str(out)])
    assert cmd_show.run(args) == 0
    shown, record = json.loads(out.read_text()), cpu_record()
    assert {k: shown[k] for k in record} == record
    # the sections the file lacks are shown as such, never left out
    assert {k: v for k, v in shown.items() if k not in record} == {
        k: {"unavailable": "not present in this record"}
        for k in ("first_step", "keras", "program", "tensorflow")
    }
