"""Write the module index at the end of ``docs/architecture.md``: every module of the package, by
folder, with the first sentence of its docstring.

Why: the hand-written part of that page drifted (it omitted ``lazy.py``, ``model/missing.py``,
``run/started.py``...). The index is generated from the tree, so it cannot omit a module, and
``tests/unit/test_architecture_index.py`` fails when the page is not what this script writes.
Regenerate it with ``python scripts/architecture_index.py``; ``--check`` only compares.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "mlflow_fingerprint"
PAGE = ROOT / "docs" / "architecture.md"
START = "<!-- module index: written by scripts/architecture_index.py, not by hand -->"
END = "<!-- end of the module index -->"
# A sentence ends at . ! ? before a space and a capital, a quote or a parenthesis, or at the end.
_SENTENCE = re.compile(r"^(.*?[.!?])(?=\s+[A-Z`(\"*]|$)")


def first_sentence(docstring: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    paragraph = " ".join(docstring.split("\n\n", 1)[0].split())
    found = _SENTENCE.match(paragraph)
    return found.group(1) if found else paragraph


def index(package: Path = PACKAGE) -> str:
    """The index as the page holds it, between its two markers (included)."""
    lines = [START, "", "## Every module"]
    folder = None

    # A folder's modules together, before its subfolders' (prove/, then prove/executors/).
    def place(p: Path) -> tuple[bool, tuple[str, ...], str]:
        return (p.parent != package, p.parent.relative_to(package).parts, p.name)

    for path in sorted(package.rglob("*.py"), key=place):
        relative = path.relative_to(package)
        here = relative.parent.as_posix()
        if here != folder:
            folder = here
            lines += ["", f"### `{here}/`" if here != "." else "### the package's top level", ""]
        docstring = ast.get_docstring(ast.parse(path.read_text())) or "(no docstring)"
        lines.append(f"- `{relative.as_posix()}`: {first_sentence(docstring)}")
    return "\n".join([*lines, "", END]) + "\n"


def rewritten(page: str, package: Path = PACKAGE) -> str:
    """``page`` with its index replaced (or added at the end where it has none)."""
    head = page.split(START, 1)[0].rstrip("\n")
    tail = page.split(END, 1)[1].lstrip("\n") if END in page else ""
    return f"{head}\n\n{index(package)}" + (f"\n{tail}" if tail else "")


def main(argv: list[str]) -> int:
    page = PAGE.read_text()
    new = rewritten(page)
    if "--check" in argv:
        if new != page:
            print(f"{PAGE.relative_to(ROOT)}: the module index is stale; run {__file__}")
            return 1
        return 0
    PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
