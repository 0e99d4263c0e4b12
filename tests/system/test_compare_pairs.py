"""Real digits-CNN runs that differ in exactly one thing: the comparator must name that thing.

The runs are the session's (``digits_runs``, tests/support/trained.py): trained once, read here
and by the partial-record tests.
"""

from __future__ import annotations

import re

import pytest

from mlflow_fingerprint import diff
from support.trained import TrainedRuns

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


@pytest.fixture
def runs(digits_runs: TrainedRuns) -> dict[str, str]:
    """name -> run id, and ``uri``: the session's trained runs (support/trained.py)."""
    return {**digits_runs.ids, "uri": digits_runs.uri}


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


@pytest.mark.parametrize("pair", sorted(p for p in PAIRS if PAIRS[p][2].startswith("program.")))
def test_the_report_of_a_one_flag_pair_fits_one_screen(runs, pair):
    """Issue 29: the text report of a one-flag pair fits 25 lines of 100 columns: the verdict,
    the change with what it set folded under it, the first divergence and the noise band; the
    rest behind --all, and nothing shortened inside a word."""
    from mlflow_fingerprint.present import render
    from support.diff_text import RANKED, assert_setting_ranked_first, consequences

    a, b, field, consequence = PAIRS[pair]
    report = diff(runs[a], runs[b], tracking_uri=runs["uri"])
    text = render(report, "text")
    lines = text.splitlines()
    assert len(lines) <= 25, text
    assert max(map(len, lines)) <= 100, text
    assert lines[0].startswith(f"verdict: {report.verdict}  ")
    assert RANKED.findall(text) == [field], text  # one change, one numbered row
    assert_setting_ranked_first(text, consequence or field)
    if consequence is not None:
        assert consequence in consequences(text)
    if any(not m.equal for m in report.metrics):
        assert "first divergence" in text
        assert any(line.startswith("noise band: ") for line in lines), text
    everything = render(report, "text", include_none=True)
    for cut in re.findall(r"(\S+)…", text):  # shortened after a whole word or name part
        assert cut[-1] in "./:=," or re.search(re.escape(cut) + r"(?![\w-])", everything), cut
    assert "--all shows" in lines[-1]
    assert len(everything.splitlines()) >= len(lines) or report.differences == ()
