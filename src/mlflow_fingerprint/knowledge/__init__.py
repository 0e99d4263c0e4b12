"""The knowledge base shipped inside the package: the facts the comparator's rules cite.

``determinism.md`` holds the field → effect table the rules rest on (with its sources) and the
project's own classifications. It ships in the wheel (pyproject's package-data) and is read through
``importlib.resources``, so a citation in a report points at a file every installation has.
"""

from __future__ import annotations

from importlib.resources import files

DETERMINISM = "determinism.md"
# How a citation names the file: its path inside an installed package (site-packages/...).
SHOWN_AS = f"mlflow_fingerprint/knowledge/{DETERMINISM}"


def text(name: str = DETERMINISM) -> str:
    """The whole file ``name`` of the knowledge base."""
    return files(__name__).joinpath(name).read_text(encoding="utf-8")


def rows(name: str = DETERMINISM) -> frozenset[str]:
    """The first cell of every table row in ``name``: what a rule's citation names exactly."""
    lines = text(name).splitlines()
    found = set()
    for line, below in zip(lines, [*lines[1:], ""], strict=True):
        cells = line.split(" | ")
        if line.startswith("| ") and len(cells) > 1 and not below.startswith("|---"):
            found.add(cells[0][2:].strip())  # a header row (the line below it rules) is no row
    return frozenset(found)
