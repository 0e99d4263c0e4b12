"""Under ``--dist loadfile``, a folder under ``tests/system`` is one unit of scheduling, and the
units go out longest first.

Why a folder: xdist sends a test module to one worker, so a module's fixtures are built once; a
module that grew long (``test_bisect.py``, 1051 lines) could not be split by what it proves
without its trainings running once per new module, on either worker. Its modules now sit in a
folder of their own (``tests/system/bisect/``) whose ``conftest.py`` builds what they share at
session scope; this plugin sends the whole folder to one worker, so that is built once, and the
folder's modules run there one after the other, as the one module did.

Why longest first: xdist hands out units in order of how many tests they hold, so a unit of one
long test (the MLflow UI read through a browser, 35-40 s, mostly waiting) came last and ran alone
while the other workers had finished: the last half minute of a CI run on two cores was about
half idle. Handed out by their measured time instead (``durations.json``, the longest first, the
way a longest-processing-time schedule packs jobs onto machines), the short unit modules come
last and fill the gaps. A unit the file does not know (a new module) goes after the known ones,
most tests first, as xdist would order it. ``python tests/support/scopes.py LOG`` writes the
file again from a run's ``--durations=0`` report.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

SYSTEM = "tests/system/"
DURATIONS = Path(__file__).with_name("durations.json")
# a line of pytest's --durations report: "12.34s call     tests/x.py::test_y[z]"
REPORT_LINE = re.compile(r"^(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(\S+)")


def scope_of(nodeid: str) -> str:
    """The unit of scheduling of a test: its module, or its folder under ``tests/system``."""
    path = nodeid.split("::", 1)[0]
    rest = path.removeprefix(SYSTEM)
    if rest != path and "/" in rest:
        return SYSTEM + rest.split("/", 1)[0]
    return path


def scope_seconds(report: Iterable[str]) -> dict[str, float]:
    """Each unit's seconds (setup, call and teardown of its tests) in a ``--durations=0``
    report, the longest first."""
    seconds: defaultdict[str, float] = defaultdict(float)
    for line in report:
        found = REPORT_LINE.match(line)
        if found:
            seconds[scope_of(found.group(2))] += float(found.group(1))
    return {scope: round(s, 1) for scope, s in sorted(seconds.items(), key=lambda kv: -kv[1])}


def longest_first(
    units: Mapping[str, Mapping[str, bool]], seconds: Mapping[str, float]
) -> list[str]:
    """The units in the order they go out: the system tier's, then the unit tier's (each unit
    test is held to a few seconds, which the heaviest system units' load at the start would
    cost them); within each, those ``seconds`` knows, longest first, then the others, most
    tests first (xdist's own order); ties keep the collection's order (the sort is stable)."""
    return sorted(
        units,
        key=lambda unit: (
            not unit.startswith(SYSTEM),
            unit not in seconds,
            -seconds.get(unit, 0.0),
            -len(units[unit]),
        ),
    )


def known_seconds(path: Path = DURATIONS) -> dict[str, float]:
    """The measured seconds of each unit; none where the file is missing."""
    return json.loads(path.read_text()) if path.is_file() else {}


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    seconds = known_seconds()

    class FolderScheduling(LoadFileScheduling):  # type: ignore[misc]
        ordered = False  # xdist fills its queue, then assigns its first unit: ordered then

        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            if not self.ordered:
                self.ordered = True
                for unit in longest_first(self.workqueue, seconds):
                    self.workqueue.move_to_end(unit)
            super()._assign_work_unit(node)

    return FolderScheduling(config, log)


if __name__ == "__main__":
    text = Path(sys.argv[1]).read_text(errors="replace").splitlines()
    DURATIONS.write_text(json.dumps(scope_seconds(text), indent=1) + "\n")
