"""What a bisect reads before it reruns anything (``prove/pair.py``): whether this machine can
stand for A, and the dry run's plan (the first and the largest rerun, what it would set). Real
records; the runs themselves are read from a store in ``tests/system``."""

from __future__ import annotations

import copy
from pathlib import Path

from mlflow_fingerprint.prove.pair import not_here, planned
from support.gitrepo import committed_repo
from support.recorded import recorded, setup_of
from support.records import cpu_capture, edit, rehash


def test_a_machine_like_a_s_is_no_reason_to_refuse() -> None:
    here = cpu_capture()
    s = setup_of(recorded("A", here), recorded("B", edit(here, **{"seeds.requested": 1})))
    assert not_here(s.a, s.b, s.until, s.sides) is None


def test_a_machine_unlike_a_s_refuses_with_what_differs_and_claims_nothing() -> None:
    here = cpu_capture()
    old = edit(here, **{"torch.version": "1.0.0"})
    s = setup_of(recorded("A", old), recorded("B", here))
    result = not_here(s.a, s.b, s.until, s.sides)
    assert result is not None
    assert result.verdict == "not_settable"
    assert result.causes == ()
    assert result.reruns == ()
    assert result.cannot_set[0] == "torch.version"
    assert f"torch.version (A: 1.0.0; here: {here['torch']['version']})" in result.notes[0]


def test_a_dry_run_plans_a_as_recorded_and_a_with_every_settable_value_of_b(
    tmp_path: Path,
) -> None:
    origin = committed_repo(tmp_path / "repo", {"train.py": "print(1)\n"})
    a = cpu_capture()
    # A package and a file of code, not a seed: whether the seed of a capture of this process is
    # settable depends on what ran before it in the worker (two full CIs planned no seed here;
    # the seed's rerun is proven by tests/system/bisect's seed pair)
    b = copy.deepcopy(edit(a, **{"packages.distributions.six": "1.0.1"}))
    source = next(iter(b["program"]["sources"]["files"]))
    b["program"]["sources"]["files"][source] = "f" * 16
    s = setup_of(recorded("A", a), recorded("B", rehash(b)), parted=3, until=5)
    dry = planned(s, origin, 60.0, ("environment for A's packages: ...",))
    assert dry.command == "bisect"
    assert dry.runs == ("A", "B")
    assert dry.until_step == 5
    (first, plain), (largest, every) = dry.launches
    assert "A as recorded" in first
    assert "every settable value of B" in largest
    assert plain["overrides"] == {}
    assert plain["env"]["MLFLOW_FINGERPRINT_STOP_AFTER"] == "5"
    assert plain["env"]["MLFLOW_FINGERPRINT_WATCH_STEPS"] == "3"
    assert every["overrides"] == {
        "packages.distributions.six": "1.0.1",
        f"program.sources.files.{source}": "f" * 16,
    }
    assert every["files_from_b"] == [source]
    how = {x["field"]: x["how"] for x in dry.settable}
    assert how["packages.distributions.six"] == "package"
    assert how[f"program.sources.files.{source}"] == "code"
    assert dry.notes[0].startswith("the code: a temporary worktree of")
    assert dry.notes[1] == "environment for A's packages: ..."


def test_a_dry_run_with_nothing_to_set_plans_one_rerun(tmp_path: Path) -> None:
    origin = committed_repo(tmp_path / "repo", {"train.py": "print(1)\n"})
    a = cpu_capture()
    s = setup_of(recorded("A", a), recorded("B", a), parted=None, until=None)
    dry = planned(s, origin, 60.0)
    assert len(dry.launches) == 1
    assert dry.settable == ()
    assert "MLFLOW_FINGERPRINT_WATCH_STEPS" not in dry.launches[0][1]["env"]
