"""``cli/output.py``: where a command's result cannot go is one clear error, not a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mlflow_fingerprint.cli.output import emit
from mlflow_fingerprint.errors import UsageError


@pytest.mark.parametrize("output", ["", "  "])
def test_an_empty_output_name_is_refused(output: str) -> None:
    """It named the current directory: "cannot write : Is a directory"."""
    with pytest.raises(UsageError, match="--output names no file"):
        emit("result", output)


def test_a_closed_standard_output_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python sets ``sys.stdout`` to None when started with it closed (``>&-``)."""
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(UsageError, match="standard output is closed"):
        emit("result", None)


def test_the_result_reaches_a_file_or_standard_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emit("to a file", str(tmp_path / "out.txt"))
    emit("to stdout", "-")
    assert (tmp_path / "out.txt").read_text() == "to a file\n"
    assert capsys.readouterr().out == "to stdout\n"
