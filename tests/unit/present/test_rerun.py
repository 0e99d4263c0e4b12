"""A rerun's result and a dry run (``present/rerun.py``): the verdict in words, what was set,
and for a dry run every launch as it would run, nothing run."""

from __future__ import annotations

import json

from mlflow_fingerprint.present.rerun import as_json, dry_run_text, rerun_text
from mlflow_fingerprint.prove.results import DryRun, RerunResult

LAUNCH = {
    "commit": "abc123",
    "diff_applied": True,
    "entry": {"kind": "path", "module": None, "path": "train.py"},
    "argv": ["train.py", "--seed", "1"],
    "cwd": ".",
    "timeout_s": 600.0,
    "env": {"OMP_NUM_THREADS": "1"},
    "env_unset": ["CUDA_VISIBLE_DEVICES"],
    "overrides": {"seeds.requested": "1"},
    "files_from_b": [],
}


def test_the_verdict_says_where_the_curves_part_and_what_was_set() -> None:
    parted = RerunResult("new", "old", {"seeds.requested": 1}, False, 3, 5, 4)
    text = rerun_text(parted)
    assert text.startswith("rerun of old: run new\nnot reproduced: the curves part at step 3\n")
    assert "set: seeds.requested=1" in text
    assert "the rerun stopped at step 5" in text
    same = rerun_text(RerunResult("new", "old", {}, True, None, None, None), "the diff\n")
    assert "reproduced: every metric equal, bit for bit, over the whole run" in same
    assert same.endswith("\nthe diff\n")  # a whole run's diff comes after


def test_a_dry_run_shows_each_launch_and_runs_nothing() -> None:
    dry = DryRun("rerun", ("old",), (("the rerun", LAUNCH),), until_step=2)
    text = dry_run_text(dry)
    assert text.startswith("fingerprint rerun old (dry run: nothing was run)\n")
    assert "  commit: abc123 + the run's uncommitted diff" in text
    assert "  entry (path): train.py" in text
    assert "  unset: CUDA_VISIBLE_DEVICES" in text
    assert "  overrides: seeds.requested=1" in text
    assert json.loads(as_json(dry))["command"] == "rerun"
