"""Real digits-CNN runs that differ in exactly one thing: the comparator must name that thing.

Every run is trained once per session, in this process (``examples/digits.py`` through its own
command line), a few dozen steps each, in a temporary git repository so that one run can have a
dirty tree. Unseeded runs first reseed torch from the OS, as a fresh process would.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from mlflow_fingerprint import diff
from support.gitrepo import git
from support.records import new_store

pytestmark = pytest.mark.slow

STEPS = ["--epochs", "1", "--max-steps", "15"]
RUNS = {
    "a": ["--seed", "0"],
    "a_again": ["--seed", "0"],
    "seed1": ["--seed", "1"],
    "unseeded1": [],
    "unseeded2": [],
    "batch32": ["--seed", "0", "--batch-size", "32"],
    "deterministic": ["--seed", "0", "--deterministic"],
    "threads1": ["--seed", "0", "--threads", "1"],
    "threads2": ["--seed", "0", "--threads", "2"],
    "workers2": ["--seed", "0", "--num-workers", "2"],
    "aug_workers0": ["--seed", "0", "--augment", "--num-workers", "0"],
    "aug_workers2": ["--seed", "0", "--augment", "--num-workers", "2"],
}

# pair -> (A, B, the change that must rank first, a field it set or None)
PAIRS = {
    "seed": ("a", "seed1", "program.options.seed", "seeds.requested"),
    "seeded vs unseeded": ("a", "unseeded1", "program.options.seed", "seeds.requested"),
    "batch size": ("a", "batch32", "program.options.batch-size", "data.loaders.0.batch_size"),
    "num_workers with random augmentation": (
        "aug_workers0",
        "aug_workers2",
        "program.options.num-workers",
        "data.loaders.0.num_workers",
    ),
    "deterministic flag": (
        "a",
        "deterministic",
        "program.options.deterministic",
        "determinism.deterministic_algorithms",
    ),
    "thread count": ("threads2", "threads1", "program.options.threads", "torch.threads.intra_op"),
    "dirty git tree": ("a", "dirty", "git.dirty", None),
}


def train(digits, uri: str, name: str, args: list[str]) -> str:
    import torch

    threads = torch.get_num_threads()
    if "--seed" not in args:
        torch.seed()  # a fresh process starts from an OS-drawn seed
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            digits.main(
                [*args, *STEPS, "--experiment", "pairs", "--run-name", name, "--tracking-uri", uri]
            )
    finally:
        torch.set_num_threads(threads)  # --threads is process-wide
    return json.loads(out.getvalue().strip().splitlines()[-1])["run_id"]


@pytest.fixture(scope="module")
def runs(digits, tmp_path_factory, mlflow_db_template):
    """name -> run id, every run of RUNS plus ``dirty``, trained once."""
    from mlflow import MlflowClient

    root = tmp_path_factory.mktemp("pairs")
    uri = new_store(root, mlflow_db_template)
    MlflowClient(uri).create_experiment("pairs", artifact_location=(root / "art").as_uri())
    repo = root / "repo"
    repo.mkdir()
    (repo / "recipe.txt").write_text("lr=1e-3\n")
    git(repo, "init", "-q")
    git(repo, "add", "recipe.txt")
    git(repo, "commit", "-q", "-m", "recipe")
    import mlflow

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(repo)
        patch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(root / "spool"))
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        try:
            ids = {name: train(digits, uri, name, args) for name, args in RUNS.items()}
            (repo / "recipe.txt").write_text("lr=1e-3  # tuned\n")
            ids["dirty"] = train(digits, uri, "dirty", RUNS["a"])
        finally:
            mlflow.set_tracking_uri(None)
    ids["uri"] = uri
    return ids


def test_identical_runs_give_same_results_and_exit_0(runs):
    report = diff(runs["a"], runs["a_again"], tracking_uri=runs["uri"])
    assert report.verdict == "same_results"
    assert report.effective_differences == ()
    assert all(m.bitwise_equal for m in report.metrics)
    assert report.exit_code == 0


@pytest.mark.parametrize("pair", PAIRS, ids=list(PAIRS))
def test_single_change_pair_is_explained_by_the_changed_setting(runs, pair):
    a, b, changed, consequence = PAIRS[pair]
    report = diff(runs[a], runs[b], tracking_uri=runs["uri"])
    top = report.differences[0]
    assert top.field == changed, [d.field for d in report.differences][:5]
    if consequence is not None:  # one change, with the fields it set beneath it
        assert consequence in [c.field for c in top.consequences]
    metrics_equal = all(m.equal for m in report.metrics)
    assert report.verdict == ("same_results" if metrics_equal else "explained")
    assert report.exit_code == 1
    assert {m.name for m in report.metrics} >= {"loss", "val_error"}


def test_two_unseeded_runs_are_nondeterministic(runs):
    report = diff(runs["unseeded1"], runs["unseeded2"], tracking_uri=runs["uri"])
    assert report.verdict == "nondeterministic"
    assert report.effective_differences == ()
    assert report.enablers[0].field == "seeds.requested"
    assert next(m for m in report.metrics if m.name == "loss").first_divergence_step == 0


@pytest.mark.parametrize(
    "pair",
    [
        "seed",
        "seeded vs unseeded",
        "batch size",
        "num_workers with random augmentation",
    ],
)
def test_a_change_of_random_stream_or_recipe_changes_the_loss_from_the_first_steps(runs, pair):
    a, b, _, _ = PAIRS[pair]
    report = diff(runs[a], runs[b], tracking_uri=runs["uri"])
    assert report.verdict == "explained"
    loss = next(m for m in report.metrics if m.name == "loss")
    assert loss.first_divergence_step is not None
    assert loss.first_divergence_step <= 1


def test_num_workers_is_harmless_for_a_dataset_that_draws_nothing_and_the_losses_agree(runs):
    report = diff(runs["a"], runs["workers2"], tracking_uri=runs["uri"])
    assert report.effective_differences == ()
    option = report.differences[0]  # --num-workers 2: it set only the worker count
    assert (option.field, option.effect) == ("program.options.num-workers", "none")
    workers = option.consequences[0]
    assert (workers.field, workers.effect) == ("data.loaders.0.num_workers", "none")
    assert workers.explanation == (
        "The dataset draws no random numbers in its workers, and the worker count does not "
        "change sample order."
    )
    # The training agrees: two workers loaded the same samples in the same order.
    assert report.verdict == "same_results"
    assert all(m.bitwise_equal for m in report.metrics)
    assert report.exit_code == 0


def test_num_workers_is_the_top_randomness_cause_for_a_dataset_that_augments(runs):
    report = diff(runs["aug_workers0"], runs["aug_workers2"], tracking_uri=runs["uri"])
    top = report.differences[0]
    assert (top.field, top.effect) == ("program.options.num-workers", "randomness")
    workers = top.consequences[0]
    assert (workers.field, workers.effect) == ("data.loaders.0.num_workers", "randomness")
    assert "draw random numbers while loading (draws_random)" in workers.explanation


def test_the_deterministic_pair_says_which_run_asked_for_it(runs):
    report = diff(runs["a"], runs["deterministic"], tracking_uri=runs["uri"])
    option = report.differences[0]
    assert option.field == "program.options.deterministic"
    first, second = option.consequences[:2]
    assert first.field == "determinism.deterministic_algorithms"
    assert (second.field, second.effect) == ("determinism.requested.mode", first.effect)
    assert second.explanation == (
        "B asked for deterministic mode (mlflow_fingerprint.fingerprinted), A did not: that "
        "request is why determinism.deterministic_algorithms differs."
    )
