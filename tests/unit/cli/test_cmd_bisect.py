"""``fingerprint bisect`` (``cli/cmd_bisect.py``) on what it cannot bisect: records read from
files are not runs it can rerun, refused with one line before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlflow_fingerprint.cli.main import EXIT_BAD_INPUT, main
from support.records import cpu_record, seeded, write


def test_two_record_files_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write(tmp_path, "a", seeded(cpu_record(), 0))
    b = write(tmp_path, "b", seeded(cpu_record(), 1))
    assert main(["bisect", a, b]) == EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("fingerprint bisect: error: ")
    assert err.count("\n") == 1, err
