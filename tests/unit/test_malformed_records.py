"""Records are input: a record read back (a file, a run's artifact) may hold any JSON at any field.
Every field of two real captures (this machine as a CPU one, and through a recorded H100), given
a value of another kind, is shown and compared, or the record refused, in one line: never an
exception of the reader's own code (``TypeError: unhashable type: 'list'``, ``AttributeError:
'int' object has no attribute 'get'``)."""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mlflow_fingerprint.cli import main as cli_main
from mlflow_fingerprint.cli.main import build_parser, main
from mlflow_fingerprint.model.record import SECTIONS
from support.records import cpu_capture, gpu_record

# A number where an object, a list or a word was; a list where a word was (unhashable).
WRONG = (5, [])
MANY = 24
INTERNAL = ("TypeError", "AttributeError", "KeyError", "IndexError", "ValueError", "Exception")

Path_ = tuple[str | int, ...]


def paths(node: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every field under ``node``; of a long list or table of one kind (the installed
    distributions, the modules imported), its first MANY."""
    items = list(node.items() if isinstance(node, dict) else enumerate(node))[:MANY]
    for key, value in items:
        yield (*prefix, key)
        if isinstance(value, dict | list):
            yield from paths(value, (*prefix, key))


def with_value(record: dict[str, Any], path: Path_, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(record)
    node: Any = changed
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return changed


def answer(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


@functools.cache
def parser() -> argparse.ArgumentParser:
    """One parser for the thousands of commands: building it is half of what each costs."""
    return build_parser()


# Every section of the CPU machine's record; of the GPU machine's, those a CPU record holds little
# of (its devices, its CUDA and its numerics).
CASES = [("cpu", section) for section in SECTIONS] + [
    ("h100", section) for section in ("gpu", "cuda", "numerics")
]


@pytest.mark.parametrize(("machine", "section"), CASES)
def test_every_field_of_another_kind_is_read_or_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, machine: str, section: str
) -> None:
    monkeypatch.setattr(cli_main, "build_parser", parser)
    record = cpu_capture() if machine == "cpu" else gpu_record("h100")
    # as a decorated run asking for deterministic mode records it (a bare capture asked nothing)
    record["determinism"]["requested"] = {"mode": "on", "by": "decorator", "applied": []}
    original = tmp_path / "original.json"
    original.write_text(json.dumps(record))
    changed = tmp_path / "changed.json"
    problems = []
    for path in paths(record[section], (section,)):
        for value in WRONG:
            changed.write_text(json.dumps(with_value(record, path, value)))
            for argv in (["show", str(changed)], ["diff", str(original), str(changed), "--all"]):
                code, err = answer(argv)
                if code in (0, 1):
                    continue
                if err.count("\n") != 1 or any(f"{name}:" in err for name in INTERNAL):
                    problems.append(f"{argv[0]} {'.'.join(map(str, path))}={value!r}: {err}")
    assert problems == []


def test_the_cases_walk_every_section_of_a_record() -> None:
    assert set(cpu_capture()) - {"schema_version", "tool_version", "captured_at", "hashes"} == {
        section for machine, section in CASES if machine == "cpu"
    }
