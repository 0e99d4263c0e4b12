"""Bad input read as a fingerprint, through the real ``fingerprint`` command: a record with no
section this release knows, a record from a newer release, a tolerance that is not a finite
number >= 0, and a FIFO named ``x.json`` each end with exit 2 and one line on stderr, never a
comparison (exit 0) or a hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mlflow_fingerprint
from support.records import cpu_record

SRC = str(Path(mlflow_fingerprint.__file__).resolve().parents[1])


def fingerprint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mlflow_fingerprint.cli", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr


@pytest.mark.parametrize(
    ("record", "says"),
    [
        ({"schema_version": 1}, "none of the sections"),
        ({"schema_version": 1, "hashes": {}, "tool_version": "0.1.0"}, "none of the sections"),
        ({"schema_version": 1, "weather": {"rain": True}}, "none of the sections"),
    ],
)
@pytest.mark.parametrize("command", ["diff", "show"])
def test_a_record_without_a_known_section_is_refused(
    record: dict[str, object], says: str, command: str, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(record))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(cpu_record()))
    args = [str(bad), str(good)] if command == "diff" else [str(bad)]
    message = one_line(fingerprint(command, *args, cwd=tmp_path))
    assert says in message
    assert "gpu" in message  # names what is missing
    assert "bad.json" in message


@pytest.mark.parametrize("command", ["diff", "show"])
def test_a_newer_record_is_refused_naming_its_version_and_the_upgrade(
    command: str, tmp_path: Path
) -> None:
    """A record written by a newer release may mean what this one cannot read (issue 25): it is
    refused, even with every section this release knows, rather than compared."""
    newer = {**cpu_record(), "schema_version": 7, "quantum": {"qubits": 5}}
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(newer))
    args = [str(path), str(path)] if command == "diff" else [str(path)]
    message = one_line(fingerprint(command, *args, cwd=tmp_path))
    assert "schema_version 7" in message
    assert "pip install --upgrade mlflow-fingerprint" in message


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "NaN"])
@pytest.mark.parametrize("option", ["--atol", "--rtol"])
def test_a_tolerance_that_is_not_a_finite_number_is_refused(
    option: str, value: str, tmp_path: Path
) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(cpu_record()))
    message = one_line(fingerprint("diff", str(good), str(good), f"{option}={value}", cwd=tmp_path))
    assert option in message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("command", ["diff", "show"])
def test_a_fifo_named_json_is_refused_without_waiting(command: str, tmp_path: Path) -> None:
    fifo = tmp_path / "x.json"
    os.mkfifo(fifo)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(cpu_record()))
    args = [str(fifo), str(good)] if command == "diff" else [str(fifo)]
    message = one_line(fingerprint(command, *args, cwd=tmp_path))  # the timeout is the hang check
    assert "not a regular file" in message
    assert "x.json" in message
