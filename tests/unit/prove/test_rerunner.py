"""Reruns of one recorded run (``prove/rerunner.py``) outside the trainings: the run a rerun made
found again by its token in a real sqlite store, ended and marked where it was left RUNNING, its
name, and what one round can hold. Reruns with real trainings are in ``tests/system``."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from mlflow_fingerprint import layout
from mlflow_fingerprint.errors import UsageError
from mlflow_fingerprint.prove.launch import Plan
from mlflow_fingerprint.prove.process import LocalProcess
from mlflow_fingerprint.prove.rerunner import ENDED_BY, Rerunner, Slot, find_rerun
from mlflow_fingerprint.tracking import local_store
from support.hot_journal import die_inside_a_commit
from support.recorded import recorded
from support.records import cpu_record, new_store


def runner(tmp_path: Path, uri: str = "sqlite:///unused.db", **kw) -> Rerunner:
    a = recorded("A", cpu_record(), uri=uri)
    return Rerunner(a, tmp_path, tmp_path, ["loss"], LocalProcess(), 60.0, until=4, **kw)


def test_a_rerun_s_run_is_found_by_its_token_the_outermost_one(
    tmp_path: Path, mlflow_db_template: Path
) -> None:
    uri = new_store(tmp_path, mlflow_db_template)
    client = MlflowClient(uri)
    first, other = client.create_experiment("e"), client.create_experiment("other")
    token = {layout.INTERNAL_RERUN_TOKEN: "t1"}
    outer = client.create_run(first, tags=token).info.run_id
    inner = {**token, layout.MLFLOW_PARENT_RUN_ID: outer}
    client.create_run(first, tags=inner)
    assert find_rerun(client, [first], "t1") == outer
    # logged into another experiment than A's (the training chose its own): still found
    moved = client.create_run(other, tags={layout.INTERNAL_RERUN_TOKEN: "t2"}).info.run_id
    assert find_rerun(client, [first], "t2") == moved
    with pytest.raises(UsageError, match="without recording a fingerprinted run"):
        find_rerun(client, [first], "t3")


# Ray and Slurm end a stopped training with SIGTERM, often while its uploader writes: its
# store is left with a hot journal, which a read-only connection cannot play back
@pytest.mark.parametrize("died_inside_a_commit", [False, True], ids=["ended", "mid-commit"])
def test_a_rerun_left_running_is_ended_and_says_why(
    tmp_path: Path, mlflow_db_template: Path, died_inside_a_commit: bool
) -> None:
    uri = new_store(tmp_path, mlflow_db_template)
    client = MlflowClient(uri)
    experiment = client.create_experiment("e")
    run_id = client.create_run(experiment, tags={layout.INTERNAL_RERUN_TOKEN: "t1"}).info.run_id
    if died_inside_a_commit:
        die_inside_a_commit(local_store.sqlite_file(uri))
    said: list[str] = []
    r = runner(tmp_path, uri, progress=said.append)
    r._end("t1", "KILLED", "the rerun was interrupted by SIGTERM")
    run = client.get_run(run_id)
    assert run.info.status == "KILLED"
    assert run.data.tags[layout.INTERNAL_ENDED_BY] == ENDED_BY
    assert run.data.tags[layout.INTERNAL_END_REASON] == "the rerun was interrupted by SIGTERM"
    r._end("never-started", "FAILED", "timeout")  # no run made: nothing to end, no error
    assert said == []


def test_a_store_that_cannot_be_read_is_said_not_passed_over(tmp_path: Path) -> None:
    said: list[str] = []
    (tmp_path / "notes.db").write_bytes(b"not a database")
    r = runner(tmp_path, f"sqlite:///{tmp_path / 'notes.db'}", progress=said.append)
    r._end("t1", "KILLED", "the rerun was interrupted by SIGTERM")
    assert len(said) == 1, said
    assert said[0].startswith("could not end the rerun's run: "), said


def test_one_tree_holds_one_rerun_a_round_of_more_needs_more_trees(tmp_path: Path) -> None:
    alone = runner(tmp_path)
    assert alone.round_size(4) == 1
    assert alone._slot(0) == Slot(tmp_path, None)
    with pytest.raises(ValueError, match="needs a tree for each"):
        alone._slot(1)
    made: list[Path] = []

    def another() -> Slot:
        made.append(tmp_path / f"t{len(made)}")
        return Slot(made[-1])

    beside = runner(tmp_path, more=another)
    assert beside.round_size(4) == 4
    assert beside._slot(2) == Slot(tmp_path / "t1")
    assert made == [tmp_path / "t0", tmp_path / "t1"]


def test_every_rerun_starts_with_a_s_variables_unless_its_plan_sets_them(tmp_path: Path) -> None:
    r = runner(tmp_path, env={"OMP_NUM_THREADS": "1", "LR": "0.1"})
    launch = r.launch(Plan(env={"LR": "0.2"}), {"env.LR": "0.2"})
    assert launch.env == {"OMP_NUM_THREADS": "1", "LR": "0.2"}
    assert (launch.stop_after, launch.watch_steps, launch.timeout_s) == (4, (), 60.0)
    assert r.python_for(Plan()) is None  # no packages to set: this interpreter
    assert r.name(launch, 2) == "name-A·rerun 2 (LR=0.2)"
