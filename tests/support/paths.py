"""Where things are, for tests in any folder: the repository, the fixtures, the job scripts."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"
JOBS = TESTS / "jobs"  # scripts that tests start as processes (torchrun ranks, Keras, a recipe)
EXAMPLES = ROOT / "examples"
