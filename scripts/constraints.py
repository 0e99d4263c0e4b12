"""Write ``constraints.txt``: the versions the tests ran on, for every distribution the package's
extras pull (their whole dependency closure), read from the environment this script runs in.

Why: pyproject.toml states floors; a fresh ``make setup`` would otherwise take whatever is newest
that day, and the tests have only ever seen one set. ``make`` installs with ``-c constraints.txt``,
so CI and a new clone get the set that was tested. Regenerate it from a venv the full suite passed
in: ``.venv/bin/python scripts/constraints.py > constraints.txt``. torch and TensorFlow are left
out: their builds are the Makefile's choice (``TORCH``, ``TF``), per machine.
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
# torch and TensorFlow: the Makefile picks their build (TORCH, TF); the CPU build of TensorFlow is
# what make installs, so its requirements are pinned too.
LEFT_TO_MAKE = {"torch", "tensorflow", "tensorflow-cpu", "mlflow-fingerprint"}


def roots() -> list[str]:
    """What pyproject.toml asks for: its dependencies and every extra (this checkout's file, not
    the metadata of an install that may predate it), and the TensorFlow build make installs."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        wanted += [r for r in extra if canonical(Requirement(r).name) != "mlflow-fingerprint"]
    return [*wanted, "tensorflow-cpu"]


def canonical(name: str) -> str:
    """PEP 503's normalised name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(roots: list[str]) -> dict[str, str]:
    """Installed name -> version for ``roots`` and everything they require here."""
    found: dict[str, str] = {}
    todo = [Requirement(root) for root in roots]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        req = todo.pop()
        key = (canonical(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue  # an optional requirement this environment does not hold
        found[canonical(req.name)] = dist.version
        for line in dist.requires or ():
            sub = Requirement(line)
            wanted = [{"extra": extra} for extra in req.extras] or [{"extra": ""}]
            if sub.marker is None or any(sub.marker.evaluate(env) for env in wanted):
                todo.append(sub)
    return found


def main() -> int:
    pins = closure(roots())
    print("# The versions the test suite ran on (scripts/constraints.py wrote this; make uses it).")
    for name in sorted(pins):
        if name not in LEFT_TO_MAKE:
            print(f"{name}=={pins[name].split('+')[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
