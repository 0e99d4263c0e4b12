"""Real pairs of a self-seeding script that differ in what the user changed (issue 13): the
command line, an untracked copy of the script, the program's own seed, or nothing recorded.

The script (``tests/recipe_script.py``) is copied into a temporary git repository as ``train.py``
and run as a user runs it, one process per run, a few SGD steps on the digits each.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from mlflow_fingerprint import diff, layout
from mlflow_fingerprint.present import render
from support.gitrepo import git
from support.paths import JOBS, ROOT
from support.records import new_store
from support.scripts import run_for_json

SCRIPT = JOBS / "recipe_script.py"

# name -> (script, arguments, extra environment); every run has RECIPE_LR_SCALE_FILE set alike
RUNS: dict[str, tuple[str, list[str], dict[str, str]]] = {
    "a": ("train.py", ["--seed", "1", "--lr", "0.05"], {}),
    "a_again": ("train.py", ["--seed", "1", "--lr", "0.05"], {}),
    "lr": ("train.py", ["--seed", "1", "--lr", "0.02"], {}),
    "seed2": ("train.py", ["--seed", "2", "--lr", "0.05"], {}),
    "unseeded": ("train.py", ["--lr", "0.05"], {}),
    "scaled": ("train.py", ["--seed", "1", "--lr", "0.05"], {}),
    "copy": ("my_experiment.py", ["--seed", "1", "--lr", "0.05"], {}),
}
# name -> what the file outside the repository holds while that run trains (the others: none)
SCALED = {"scaled": "0.4"}


def run_script(repo: Path, uri: str, name: str) -> str:
    script, args, extra = RUNS[name]
    paths = [str(ROOT / "src"), str(ROOT / "examples"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, **extra, "PYTHONPATH": os.pathsep.join(paths)}
    env.pop("PYTHONHASHSEED", None)  # as a user's shell has it: string hashes salted
    env["RECIPE_LR_SCALE_FILE"] = str(repo.parent / "lr-scale.txt")
    args = [script, *args, "--tracking-uri", uri, "--run-name", name]
    return str(run_for_json(args, repo, env)["run_id"])


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory, mlflow_db_template: Path
) -> tuple[str, dict[str, str]]:
    """Every run of RUNS, trained once; ``my_experiment.py`` (an untracked copy of the committed
    script with one line changed: momentum 0.9) is made only before its own run."""
    base = tmp_path_factory.mktemp("recipe")
    repo = base / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shutil.copy(SCRIPT, repo / "train.py")
    git(repo, "add", "train.py")
    git(repo, "commit", "-q", "-m", "the training script")
    uri = new_store(base, mlflow_db_template)  # a copy of the migrated template
    ids = {}
    for name in RUNS:
        if name == "copy":
            text = (repo / "train.py").read_text()
            changed = text.replace("momentum: float = 0.0", "momentum: float = 0.9")
            assert changed != text
            (repo / "my_experiment.py").write_text(changed)
        scale = base / "lr-scale.txt"
        if name in SCALED:
            scale.write_text(SCALED[name])
        ids[name] = run_script(repo, uri, name)
        scale.unlink(missing_ok=True)
    return uri, ids


def report_of(runs: tuple[str, dict[str, str]], a: str, b: str):
    uri, ids = runs
    return diff(ids[a], ids[b], tracking_uri=uri)


def all_text(report) -> str:
    return json.dumps(report.to_dict())


def every_difference(report) -> dict:
    """Field -> difference, consequences included."""
    return {x.field: x for d in report.differences for x in (d, *d.consequences)}


def test_a_command_line_option_explains_the_pair(runs) -> None:
    report = report_of(runs, "a", "lr")
    assert report.verdict == "explained"
    (first,) = report.effective_differences  # one change, with what it set beneath it
    assert first.field == "program.options.lr"
    assert first.effect == "recipe"
    assert first.explanation == "argument --lr: 0.05 vs 0.02"
    fields = {d.field: d for d in first.consequences}
    assert fields["params.lr"].explanation == "param lr: 0.05 vs 0.02"
    assert fields["program.call.lr"].explanation == "call argument lr: 0.05 vs 0.02"
    (loss,) = [m for m in report.metrics if m.name == "loss"]
    assert loss.first_divergence_step == 1  # equal at step 0: the weights started alike
    assert not [d for d in report.differences if d.field.startswith("seeds.")]
    # the program seeded itself: no "neither run set a seed"
    assert "seeds.requested" not in [e.field for e in report.enablers]
    # "scaled" has A's recipe and seed but differs for a reason nothing records, while "a" and
    # "a_again" reproduce bit for bit: no noise band is drawn from it
    assert loss.spread is not None
    assert (loss.spread.band, loss.spread.outside) == (0.0, True)
    assert any("with nothing recorded to tell why" in n for n in report.notes)


def test_an_untracked_copy_of_the_script_is_the_entry_point(runs) -> None:
    report = report_of(runs, "a", "copy")
    assert report.verdict == "explained"
    # one user change, one numbered difference: what the copy did is beneath it
    (first,) = report.effective_differences
    assert first.field == "program.entry.path"
    assert first.explanation.startswith("entry point: train.py vs my_experiment.py (untracked)")
    assert {
        "program.entry.sha256",
        "program.sources.files.train.py",
        "program.sources.files.my_experiment.py",
        "program.call.momentum",
        "params.momentum",
    } <= {c.field for c in first.consequences}
    assert "\n2  " not in render(report, "text")
    fields = every_difference(report)
    assert fields["params.momentum"].explanation == "param momentum: 0.0 vs 0.9"
    assert fields["git.untracked_count"].effect == "none"
    assert "branch name" not in fields["git.untracked_count"].explanation


def test_program_seeds_1_and_2_are_the_seeds(runs) -> None:
    report = report_of(runs, "a", "seed2")
    assert report.verdict == "explained"
    (first,) = report.effective_differences
    assert (first.field, first.effect) == ("program.options.seed", "randomness")
    (seed,) = [c for c in first.consequences if c.effect != "none"]
    assert seed.field == "seeds.torch_initial_seed"
    assert "Seeds set by the program" in seed.explanation
    assert "1 in A and 2 in B" in seed.explanation
    assert "Neither run" not in all_text(report)
    assert "seeds.requested" not in [e.field for e in report.enablers]


def test_a_program_seed_against_an_unseeded_run_says_which_is_which(runs) -> None:
    report = report_of(runs, "a", "unseeded")
    assert report.verdict == "explained"
    first = report.differences[0]
    assert first.field == "program.options.seed"
    seeds = every_difference(report)["seeds.torch_initial_seed"]
    assert seeds.explanation.startswith("A's program seeded torch with 1; B was not seeded")
    assert "Neither run" not in all_text(report)


def test_two_program_seeded_equal_runs_are_the_same_and_not_called_unseeded(runs) -> None:
    report = report_of(runs, "a", "a_again")
    assert report.verdict == "same_results"
    assert all(m.bitwise_equal for m in report.metrics)
    assert not [d for d in report.differences if d.effect != "none"]
    assert [e.field for e in report.enablers] == ["seeds.pythonhashseed"]  # unset, as run here
    text = all_text(report).lower()
    for claim in ("unseeded", "neither run", "was not seeded", "differ every", "draws fresh"):
        assert claim not in text
    from mlflow import MlflowClient

    uri, ids = runs
    client = MlflowClient(uri)
    recipe = [client.get_run(ids[n]).data.tags[layout.TAG_HASH_RECIPE] for n in ("a", "a_again")]
    assert recipe[0] == recipe[1]  # their --run-name differs; it names the run, not the recipe
    lr = client.get_run(ids["lr"]).data.tags[layout.TAG_HASH_RECIPE]
    assert lr != recipe[0]


def test_a_change_nothing_records_is_unexplained_and_says_what_is_ruled_out(runs) -> None:
    report = report_of(runs, "a", "scaled")
    assert report.verdict == "unexplained"
    assert not [d for d in report.differences if d.effect != "none"]
    # salted string hashes (PYTHONHASHSEED unset) act as the program sets up, from step 0: they
    # are listed, and ruled out by the curves
    assert [e.field for e in report.enablers] == ["seeds.pythonhashseed"]
    (loss,) = [m for m in report.metrics if m.name == "loss"]
    assert loss.first_divergence_step == 1
    note = " ".join(report.notes)
    assert "identical at step 0 and part at step 1" in note
    assert "initial weights, data order, worker streams and seeds" in note
