"""``fingerprint capture`` (``cli/cmd_capture.py``): this environment's record, as JSON or as
the summary of that same record."""

from __future__ import annotations

import json
from pathlib import Path

from mlflow_fingerprint.cli import cmd_capture
from mlflow_fingerprint.cli.main import build_parser
from mlflow_fingerprint.model.record import SECTIONS


def test_json_is_a_whole_record_and_text_its_summary(tmp_path: Path) -> None:
    as_json, as_text = tmp_path / "fp.json", tmp_path / "fp.txt"
    parser = build_parser()
    assert (
        cmd_capture.run(parser.parse_args(["capture", "--format", "json", "-o", str(as_json)])) == 0
    )
    assert cmd_capture.run(parser.parse_args(["capture", "-o", str(as_text)])) == 0
    record = json.loads(as_json.read_text())
    assert set(SECTIONS) <= set(record)
    assert record["python"]["version"] in as_text.read_text()
