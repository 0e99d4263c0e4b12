"""The README shows what the code prints today, and CI runs its test command (its set-up block is
the Makefile's targets: tests/system/test_readme_blocks.py)."""

from __future__ import annotations

import subprocess
import sys

from support.paths import ROOT


def test_readme_diff_sample_matches_current_output() -> None:
    out = subprocess.run(
        [sys.executable, "docs/make_samples.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, "README diff sample is stale: run python docs/make_samples.py"


def test_ci_runs_the_readme_test_command_and_lint() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci
    assert "make lint" in ci
