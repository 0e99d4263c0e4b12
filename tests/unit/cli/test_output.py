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


@pytest.mark.parametrize("styled", [False, True])
def test_a_text_in_pieces_is_written_as_the_whole_would_be(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], styled: bool
) -> None:
    """Pieces, joined into blocks of ``BLOCK`` characters as they come, are escaped as the
    whole text is: a control character at a block's edge or alone in a piece is written out,
    and a text that ends in a newline gets no second one."""
    from mlflow_fingerprint.cli.output import BLOCK

    pieces = ["a" * (BLOCK - 1), "\x1b", "[2J", "b" * BLOCK, "\x9b", "end\n"]
    emit("".join(pieces), "-", styled=styled)
    whole = capsys.readouterr().out
    emit(iter(pieces), "-", styled=styled)
    assert capsys.readouterr().out == whole
    emit(iter(pieces), str(tmp_path / "out.txt"), styled=styled)
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == whole
    assert whole.endswith("end\n")
    assert not whole.endswith("\n\n")
    assert ("\x1b" in whole) is styled
    assert ("\\u001b[2J" in whole) is not styled
    emit(iter([]), "-")
    assert capsys.readouterr().out == "\n"
