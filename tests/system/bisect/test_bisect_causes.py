"""``fingerprint bisect`` and ``mfp.bisect`` on real trainings (issues 15 and 23): a bisect names
the one difference that moves the numbers and rules out the rest, in few reruns that stop a few
steps after the curves part; what no rerun can set, a run from another GPU and a variable that
would run code are never claimed as causes. The runs and the bisects are ``bisect_runs.py``'s,
built once for this folder."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from bisect_runs import ENV_TOKEN, Project, cause_fields, check_stops

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.mark.parametrize(
    ("pair", "cause", "sets"),
    [
        ("seed", "program.options.seed", "seeds.requested"),
        ("lr", "program.options.lr", None),
        ("code", "program.sources.files.model.py", None),
        ("w2", "program.options.workers", "data.loaders.0.num_workers"),
        ("det", "program.options.deterministic", "determinism.deterministic_algorithms"),
        ("bare", "program.options.lr", None),
    ],
)
def test_bisect_names_the_one_difference_that_moves_the_numbers(
    project: Project, jobs: dict[str, Any], pair: str, cause: str, sets: str | None
) -> None:
    """With the summary metric the README's train() returns (``bare``: without it): reruns
    stopped early never log it, and that is no divergence at step 0."""
    done = jobs[f"bisect:{pair}"]
    report = done.json()
    assert done.code == 0, report
    assert report["verdict"] == "proven"
    assert cause_fields(report) == [cause]
    if sets is not None:
        assert sets in report["causes"][0]["sets"]
    assert report["reruns"][0]["matches"] == "a"  # A reproduces itself here, summary or not
    check_stops(report)
    if pair == "seed":  # the comment-only edit and the thread count change nothing here
        assert {"program.sources.files.helpers.py", "torch.threads.intra_op"} <= set(
            report["ruled_out"]
        )
        # what seed 1 produced (the RNG states as training started) is beneath the cause,
        # never ruled out
        assert not [f for f in report["ruled_out"] if f.startswith("seeds.")], report
        assert any(".state_digests." in f for f in report["causes"][0]["sets"]), report
    if pair == "code":
        assert "program.sources.files.helpers.py" in report["ruled_out"]
    if pair != "seed":
        assert report["cannot_set"] == []


def test_summary_metrics_are_compared_as_such(project: Project, jobs: dict[str, Any]) -> None:
    """The runs share ``val_loss`` (a returned dict, logged once at the end) except the bare
    pair; ``diff`` shows it as a summary and finds the curves' own first divergence."""
    import mlflow_fingerprint as mfp
    from mlflow_fingerprint.present import render

    report = mfp.diff(project.ids["a"], project.ids["lr"], tracking_uri=project.uri)
    metrics = {m["name"]: m for m in report.to_dict()["metrics"]}
    assert metrics["val_loss"]["summary"] is True
    assert metrics["val_loss"]["first_divergence_step"] is None
    assert metrics["val_loss"]["equal"] is False
    assert metrics["loss"]["summary"] is False
    assert metrics["loss"]["first_divergence_step"] == 1  # the first step's loss is before lr acts
    assert "summary (logged at the end)" in render(report, "text")
    bare = mfp.diff(project.ids["bare_a"], project.ids["bare_lr"], tracking_uri=project.uri)
    assert [m.name for m in bare.metrics] == ["loss"]
    seed = jobs["bisect:lr"].json()
    assert seed["until_step"] == 1 + 2  # parted at the curve's step, not at the summary's step 0


def test_bisect_of_one_cause_costs_at_most_log2_k_plus_2_reruns(jobs: dict[str, Any]) -> None:
    for pair in ("seed", "code", "lr"):
        report = jobs[f"bisect:{pair}"].json()
        k = len(report["ruled_out"]) + len(report["causes"])
        assert len(report["reruns"]) <= math.ceil(math.log2(k)) + 2, (pair, k, report["reruns"])
    assert len(jobs["bisect:seed"].json()["ruled_out"]) >= 3


def test_unseeded_workers_are_nondeterministic_and_the_switch_is_named(
    jobs: dict[str, Any],
) -> None:
    done = jobs["bisect:free"]
    report = done.json()
    assert done.code == 0, report
    assert report["verdict"] == "nondeterministic"
    assert cause_fields(report) == ["data.loaders"]
    baseline, *switched = report["reruns"]
    assert baseline["matches"] != "a"
    assert baseline["overrides"] == {}
    assert len(switched) == 2
    assert all(r["overrides"] == {"data.loaders": 0} for r in switched)


def test_what_no_rerun_can_set_is_not_settable_never_proven(jobs: dict[str, Any]) -> None:
    """Only torch's version differs: A reproduces itself, nothing settable is left, and the
    bisect names what it could not set."""
    done = jobs["bisect:torchver"]
    report = done.json()
    assert done.code == 1, report
    assert report["verdict"] == "not_settable"
    assert report["causes"] == []
    assert report["cannot_set"] == ["torch.version"]
    assert [r["matches"] for r in report["reruns"]][:1] == ["a"]


def test_a_variable_the_program_reads_is_proven_four_reruns_at_a_time(
    project: Project, jobs: dict[str, Any]
) -> None:
    """B ran with ``LR_SCALE=2`` (read by the training, logged as a param) and seven variables
    it never reads, a token and a CI's variable. ``diff`` names the variable; ``bisect --jobs 4``
    proves it in at most 3 rounds, rules out the seven, lists the token as what no rerun sets
    (recorded as a digest, stored nowhere) and mentions the CI's variable only by name, among
    the volatile ones a full report lists."""
    import mlflow_fingerprint as mfp

    compared = mfp.diff(project.ids["a"], project.ids["envp"], tracking_uri=project.uri)
    report = compared.to_dict(include_none=True)  # the token changes nothing shown: effect none
    fields = {d["field"]: d for d in report["differences"]}
    assert "GITHUB_RUN_ID" in fields["program.env_volatile"]["b"]
    assert "program.env.GITHUB_RUN_ID" not in fields
    assert fields["program.env.LR_SCALE"]["effect"] == "recipe"
    assert fields["program.env.UNUSED_2"]["effect"] == "none"  # 2 too, but lr_scale is not its
    assert fields["program.env.SERVICE_TOKEN"]["b"].startswith("*** sha256:")
    done = jobs["bisect:envp"]
    result = done.json()
    assert done.code == 0, done.err[-3000:]
    assert result["verdict"] == "proven"
    assert cause_fields(result) == ["program.env.LR_SCALE"]
    assert {f"program.env.UNUSED_{i}" for i in range(7)} <= set(result["ruled_out"])
    assert "program.env.SERVICE_TOKEN" in result["cannot_set"]
    assert (result["jobs"], result["rounds"] <= 3) == (4, True), result["rounds"]
    assert result["wall_s"] > 0
    for text in (json.dumps(compared.to_dict()), done.out + done.err):
        assert "GITHUB_RUN_ID" not in text
    for text in (json.dumps(report), done.out + done.err):
        assert ENV_TOKEN not in text
    stored = [
        path
        for path in project.base.rglob("*")
        if path.is_file() and not path.is_symlink() and ENV_TOKEN.encode() in path.read_bytes()
    ]
    assert stored == []


def test_a_run_recorded_on_another_gpu_claims_no_cause(jobs: dict[str, Any]) -> None:
    done = jobs["bisect:h100"]
    report = done.json()
    assert done.code == 1
    assert report["verdict"] == "not_settable"
    assert report["causes"] == []
    assert any(f.startswith("gpu.") for f in report["cannot_set"])
    assert report["reruns"] == []


def test_a_recorded_variable_that_would_run_code_is_never_applied(
    project: Project, jobs: dict[str, Any]
) -> None:
    report = jobs["bisect:seed"].json()
    assert {
        "torch.threads.env.PYTHONPATH",
        "numerics.env.LD_PRELOAD",
        "determinism.env.PYTHONSTARTUP",
    } <= set(report["cannot_set"])
    assert not (project.base / "canary").exists()


def test_the_python_api_gives_the_command_line_s_results(jobs: dict[str, Any]) -> None:
    """``mfp.bisect`` and ``mfp.rerun`` return what the command line prints (their own reruns:
    new run ids, the same conclusions)."""
    ours, cli = jobs["api:bisect:torchver"], jobs["bisect:torchver"]
    assert ours.code == cli.code
    for key in ("verdict", "causes", "ruled_out", "cannot_set", "until_step"):
        assert ours.json()[key] == cli.json()[key], key
    ours, cli = jobs["api:rerun:until"], jobs["rerun:until"]
    assert ours.code == cli.code == 0
    for key in ("reproduced", "first_divergence_step", "stopped_at", "overrides", "rerun_of"):
        assert ours.json()[key] == cli.json()[key], key


def test_diff_names_the_bisect_that_settles_it(project: Project) -> None:
    import mlflow_fingerprint as mfp
    from mlflow_fingerprint.present import render

    a, lr = project.ids["a"], project.ids["lr"]
    notes = mfp.diff(a, lr, tracking_uri=project.uri).notes
    assert f"fingerprint bisect {a} {lr}" in " ".join(notes)
    same = mfp.diff(a, a, tracking_uri=project.uri)
    assert "fingerprint bisect" not in render(same, "text")
