"""A rerun's own decisions before it runs (``prove/reproduce.py``): how long it may run, which
code it runs (this working tree or a worktree at the run's commit, in a real git repository), and
the line saying how this machine differs from the run's. Whole reruns are in ``tests/system``."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlflow_fingerprint import limits
from mlflow_fingerprint.errors import UsageError
from mlflow_fingerprint.prove.reproduce import (
    UNKNOWN_WALL_TIMEOUT_S,
    _machine_line,
    code_note,
    origin_of,
    time_bound,
)
from mlflow_fingerprint.prove.results import MachineGap
from support.gitrepo import committed_repo, git
from support.recorded import recorded
from support.records import cpu_record


def test_a_rerun_may_run_three_times_the_run_s_wall_time_plus_two_minutes() -> None:
    record = cpu_record()
    assert time_bound(recorded("A", record, wall_s=10.0), None) == 150.0
    assert time_bound(recorded("A", record, wall_s=10.0), 7) == 7.0
    assert time_bound(recorded("A", record), None) == UNKNOWN_WALL_TIMEOUT_S
    assert time_bound(recorded("A", record, wall_s=1e12), None) == limits.MAX_SECONDS


def test_the_code_is_this_tree_only_where_it_is_the_run_s(tmp_path: Path) -> None:
    repo = committed_repo(tmp_path / "repo", {"train.py": "print(1)\n"})
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / "sub").mkdir()
    assert origin_of(repo / "sub").resolve() == repo.resolve()  # from a folder inside it
    same = recorded("A", cpu_record(), commit=head)
    assert code_note(same, repo) == f"the code: this working tree ({repo}), already the run's"
    other = recorded("A", cpu_record(), commit="1" * 40, diff="diff --git", diff_digest="ab")
    assert code_note(other, repo) == (
        f"the code: a temporary worktree of {repo} at commit 111111111111 with the run's "
        "uncommitted diff applied"
    )
    (repo / "train.py").write_text("print(2)\n")  # the tree moved on from the run's code
    edited = recorded("A", cpu_record(), commit=head, sources={"train.py": "0" * 16})
    assert "a temporary worktree" in code_note(edited, repo)


def test_outside_a_repository_the_rerun_says_so_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not in a git repository"):
        origin_of(tmp_path)


def test_the_machine_line_lists_every_gap_or_says_there_is_none() -> None:
    assert _machine_line(()).startswith("this machine computes as RUN's did")
    gaps = (MachineGap("torch.version", "2.5.0", "2.6.0"), MachineGap("gpu.name", "A100", None))
    assert _machine_line(gaps).splitlines() == [
        "this machine differs from RUN's in what no rerun can set:",
        "  - torch.version: 2.5.0 (RUN) vs 2.6.0 (here)",
        "  - gpu.name: A100 (RUN) vs None (here)",
    ]
