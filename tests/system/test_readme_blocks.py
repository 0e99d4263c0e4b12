"""Every ``bash`` block of the README and of the pages in ``docs/`` runs as written, in a fresh
shell, in a checkout after the two set-up commands.

The checkout is a copy of the repository's files (tracked, and untracked ones git does not
ignore) with the venv the tests run in as its ``.venv`` and a migrated ``mlflow.db`` (what
``make demo`` leaves). The shell starts with a bare environment: ``PATH`` without the venv, no
``MLFLOW_*`` variable, a ``HOME`` of its own. A block the test does not run says so just above
itself, with a reason, in an HTML comment the page does not show::

    <!-- readme-test: skip (why) -->     illustrative: installs elsewhere, needs a GPU or a server
    <!-- readme-test: setup (why) -->    the set-up commands themselves (CI runs them)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.checkout import copy_checkout
from support.paths import ROOT

FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!-- readme-test: (skip|setup) \((.+)\) -->$")
BLOCK_TIMEOUT_S = 240


@dataclass(frozen=True)
class Block:
    """One fenced ``bash`` block: its first line's number, its text, and its marker if any."""

    line: int
    text: str
    marker: str | None
    reason: str | None
    page: str = "README.md"


def bash_blocks(readme: str, page: str = "README.md") -> list[Block]:
    """A page's ``bash`` blocks, each with the ``readme-test`` marker on the line above it."""
    lines = readme.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        if opening.group(1) == "bash":
            above = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            marked = MARKER.match(above)
            blocks.append(
                Block(
                    line=i + 1,
                    text="\n".join(lines[i + 1 : end]),
                    marker=marked.group(1) if marked else None,
                    reason=marked.group(2) if marked else None,
                    page=page,
                )
            )
        i = end + 1
    return blocks


README_BLOCKS = bash_blocks((ROOT / "README.md").read_text())
# The pages the README links to for the rest: their commands run here too.
DOCS = sorted((ROOT / "docs").glob("*.md"))
DOCS_BLOCKS = [
    b for page in DOCS for b in bash_blocks(page.read_text(), str(page.relative_to(ROOT)))
]
TO_RUN = [b for b in [*README_BLOCKS, *DOCS_BLOCKS] if b.marker is None]


def test_markers_are_only_the_known_ones_and_say_why() -> None:
    """A misspelt marker would make a block run (or not) silently: every comment that starts like
    one must parse, and every block the test leaves out names its reason."""
    for page in [ROOT / "README.md", *DOCS]:
        for line in page.read_text().splitlines():
            if line.startswith("<!-- readme-test"):
                assert MARKER.match(line), (page, line)
    assert TO_RUN, "the README has no bash block to run"
    assert [b.marker for b in README_BLOCKS if b.marker == "setup"] == ["setup"]
    assert [b for b in DOCS_BLOCKS if b.marker == "setup"] == []


def test_the_readme_is_short_and_links_a_page_for_the_rest() -> None:
    """A newcomer reads the quick start, the three verbs and where to read more (issue 46)."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for page in ("setup", "team-server", "distributed", "gpu", "tensorflow", "limits", "speed"):
        assert f"](docs/{page}.md)" in readme, page
    assert "](docs/development.md)" in readme


def test_readme_says_how_to_get_fingerprint_on_path() -> None:
    readme = (ROOT / "README.md").read_text()
    assert ". .venv/bin/activate" in readme
    assert ".venv/bin/fingerprint" in readme


def test_setup_block_is_the_makefile_targets() -> None:
    """The set-up block, the one block not run here, is two targets of the Makefile."""
    (setup,) = [b for b in README_BLOCKS if b.marker == "setup"]
    makefile = (ROOT / "Makefile").read_text()
    commands = [line.split("#")[0].split() for line in setup.text.splitlines() if line.strip()]
    assert [c[:1] for c in commands] == [["make"], ["make"]]
    for command in commands:
        assert re.search(rf"^{command[1]}:", makefile, re.M), command


def checkout(folder: Path, template: Path) -> Path:
    """The repository's files in ``folder``, as a clone after ``make demo`` has them."""
    copy_checkout(folder)
    # the venv the tests run in: `make setup`'s, in CI
    (folder / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    shutil.copyfile(template, folder / "mlflow.db")  # `make demo` leaves the migrated store
    return folder


def fresh_shell_env(home: Path) -> dict[str, str]:
    """What a new login shell has: no venv on PATH, no MLflow settings. PYTHONPATH is kept only
    where the tests themselves run with one (a worktree checked against a shared venv)."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "TMPDIR": str(home),
    }
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


@pytest.mark.parametrize(
    "block", TO_RUN, ids=[f"{b.page.removeprefix('docs/')}:line{b.line}" for b in TO_RUN]
)
def test_readme_block_runs_as_written(
    block: Block, tmp_path: Path, mlflow_db_template: Path
) -> None:
    repo = checkout(tmp_path / "clone", mlflow_db_template)
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.text],
        cwd=repo,
        env=fresh_shell_env(home),
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_S,
    )
    assert done.returncode == 0, (
        f"{block.page} line {block.line}:\n{block.text}\nexit {done.returncode}\n"
        f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    )
