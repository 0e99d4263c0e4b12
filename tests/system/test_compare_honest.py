"""The pairs of issue 24, as a new user makes them: a Q&A-thread style script (argparse options
with defaults, ``mlflow.log_param``, a DataLoader with workers and a random augmentation nobody
declared, the reproducibility notes' seeding) trained for a few CPU steps, every run once per
session, all in one experiment with a batch-size sweep beside them.

Each pair must get the right verdict, rank-1 cause and first divergence step, and no sentence
that contradicts its curves. Runs whose interpreter start matters (PYTHONHASHSEED) run as
scripts; the others in this process (unseeded ones reseed from the OS first, as a fresh process
would).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mlflow_fingerprint import diff
from mlflow_fingerprint.present import render
from support.diff_text import RANKED
from support.paths import JOBS, ROOT
from support.records import new_store
from support.scripts import load_module, run_for_json

pytestmark = pytest.mark.slow

SCRIPT = JOBS / "honest_train.py"

# name -> (arguments, extra environment); unseeded runs have no --seed
IN_PROCESS: dict[str, tuple[list[str], dict[str, str]]] = {
    "seed0": (["--seed", "0"], {}),
    "seed0_again": (["--seed", "0"], {}),  # seed0's replicate: the band of its recipe
    "program0": (["--seed", "0"], {"HONEST_SEED_BY": "program"}),
    "unseeded1": ([], {}),
    "unseeded2": ([], {}),
    "aug_workers1": (["--augment", "--num-workers", "2", "--no-seed-workers"], {}),
    "aug_workers2": (["--augment", "--num-workers", "2", "--no-seed-workers"], {}),
    "lr": (["--seed", "0", "--lr", "0.02"], {}),
    "batch16": (["--seed", "0", "--batch-size", "16"], {}),
    "batch64": (["--seed", "0", "--batch-size", "64"], {}),
    "aug": (["--seed", "0", "--augment"], {}),
    "aug_unprobed": (["--seed", "0", "--augment"], {"MLFLOW_FINGERPRINT_DRAWS_PROBE": "0"}),
}
# name -> PYTHONHASHSEED (None: unset); run as scripts, the set of pixel names ordering the input
HASHED: dict[str, str | None] = {
    "hash_unset1": None,
    "hash_unset2": None,
    "hash1": "1",
    "hash2": "2",
}


def train_here(script, uri: str, name: str) -> str:
    import numpy as np
    import torch

    args, extra = IN_PROCESS[name]
    if "--seed" not in args:  # a fresh process starts from OS-drawn seeds
        torch.seed()
        random.seed()
        np.random.seed()
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        for key, value in extra.items():
            patch.setenv(key, value)
        script.main([*args, "--run-name", name, "--tracking-uri", uri])
    return json.loads(out.getvalue().strip().splitlines()[-1])["run_id"]


def train_script(uri: str, name: str, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(JOBS)])}
    env.pop("PYTHONHASHSEED", None)
    if HASHED[name] is not None:
        env["PYTHONHASHSEED"] = str(HASHED[name])
    args = [str(SCRIPT), "--seed", "0", "--set-order", "--run-name", name, "--tracking-uri", uri]
    return str(run_for_json(args, cwd, env)["run_id"])


@pytest.fixture(scope="session")
def runs(tmp_path_factory, mlflow_db_template):
    """name -> run id for every run above, and ``uri``; trained once per session."""
    from mlflow import MlflowClient

    root = tmp_path_factory.mktemp("honest")
    uri = new_store(root, mlflow_db_template)
    MlflowClient(uri).create_experiment("honest", artifact_location=(root / "art").as_uri())
    script = load_module(SCRIPT, "honest_train")
    ids: dict[str, str] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(root / "spool"))
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        with ThreadPoolExecutor(2) as pool:  # the scripts start while this process trains
            scripts = {name: pool.submit(train_script, uri, name, root) for name in HASHED}
            for name in IN_PROCESS:
                ids[name] = train_here(script, uri, name)
            ids.update({name: job.result() for name, job in scripts.items()})
    return {**ids, "uri": uri}


def report_of(runs, a: str, b: str):
    return diff(runs[a], runs[b], tracking_uri=runs["uri"])


def loss_of(report):
    (loss,) = [m for m in report.metrics if m.name == "loss"]
    return loss


def all_text(report) -> str:
    return (
        json.dumps(report.to_dict(include_none=True))
        + render(report, "text", include_none=True)
        + render(report, "html")
    )


def no_contradiction(report) -> None:
    """No sentence the curves contradict: seeds or initial weights said to differ on bitwise
    equal curves, "outside" noise without a band, a step-0 cause first when the curves part
    later."""
    text = all_text(report).lower()
    loss = loss_of(report)
    if loss.bitwise_equal:
        for claim in ("different seed", "different initial weights", "start from different"):
            assert claim not in text, claim
    if loss.spread is None:
        assert "outside run-to-run noise" not in text
        assert "outside seed noise" not in text
    if loss.first_divergence_step and report.effective_differences:
        assert not report.effective_differences[0].field.startswith("seeds.")


def test_two_unseeded_runs_are_nondeterministic_and_say_so(runs) -> None:
    report = report_of(runs, "unseeded1", "unseeded2")
    assert report.verdict == "nondeterministic"
    assert report.effective_differences == ()
    assert report.enablers[0].field == "seeds.requested"
    assert loss_of(report).first_divergence_step == 0
    no_contradiction(report)


def test_unseeded_workers_with_an_undeclared_augmentation_are_nondeterministic(runs) -> None:
    report = report_of(runs, "aug_workers1", "aug_workers2")
    assert report.verdict == "nondeterministic"
    assert report.effective_differences == ()
    fields = [e.field for e in report.enablers]
    assert fields[0] == "seeds.requested"
    assert "data.loaders" in fields
    assert loss_of(report).first_divergence_step == 0
    no_contradiction(report)


def test_the_augmentation_nobody_declared_is_found_by_fetching_one_item(runs) -> None:
    from mlflow_fingerprint.compare.resolve import resolve

    for name, draws in (("aug_workers1", True), ("seed0", False), ("aug_unprobed", None)):
        record = resolve(runs[name], tracking_uri=runs["uri"]).record
        (loader,) = record["data"]["loaders"]
        assert loader["dataset"]["draws_random"] is draws, name


def test_the_draws_random_probe_leaves_the_curves_bitwise_equal(runs) -> None:
    report = report_of(runs, "aug", "aug_unprobed")
    assert report.verdict == "same_results"
    assert loss_of(report).bitwise_equal
    assert report.effective_differences == ()


def test_a_seed_against_no_seed_is_the_seed_option_with_the_seeds_it_set(runs) -> None:
    report = report_of(runs, "seed0", "unseeded1")
    assert report.verdict == "explained"
    top = report.differences[0]
    assert (top.field, top.effect, top.a) == ("program.options.seed", "randomness", 0)
    assert {"seeds.requested", "seeds.torch_initial_seed"} <= {c.field for c in top.consequences}
    assert len(report.effective_differences) == 1
    assert loss_of(report).first_divergence_step == 0
    no_contradiction(report)


def test_a_program_seed_and_the_decorator_seed_compare_equal(runs) -> None:
    report = report_of(runs, "seed0", "program0")
    assert report.verdict == "same_results"
    assert loss_of(report).bitwise_equal
    assert report.effective_differences == ()
    assert report.exit_code == 0
    no_contradiction(report)
    text = all_text(report).lower()
    assert "not seeded" not in text
    assert "unseeded" not in json.dumps([d.to_dict() for d in report.differences]).lower()


def test_unset_pythonhashseed_is_the_enabler_of_set_order(runs) -> None:
    report = report_of(runs, "hash_unset1", "hash_unset2")
    assert report.verdict == "nondeterministic"
    assert report.effective_differences == ()
    assert [e.field for e in report.enablers] == ["seeds.pythonhashseed"]
    assert loss_of(report).first_divergence_step == 0
    no_contradiction(report)


def test_two_pythonhashseeds_explain_the_pair_and_rule_the_enabler_out(runs) -> None:
    report = report_of(runs, "hash1", "hash2")
    assert report.verdict == "explained"
    top = report.differences[0]
    assert (top.field, top.a, top.b, top.effect) == ("seeds.pythonhashseed", "1", "2", "randomness")
    assert "seeds.pythonhashseed" not in [e.field for e in report.enablers]
    assert loss_of(report).first_divergence_step == 0
    no_contradiction(report)


def test_an_option_left_at_its_default_is_one_difference_with_its_consequences(runs) -> None:
    report = report_of(runs, "seed0", "lr")
    assert report.verdict == "explained"
    (change,) = report.effective_differences
    assert (change.field, change.a, change.b) == ("program.options.lr", 0.05, 0.02)
    assert change.explanation == "argument --lr: 0.05 vs 0.02"
    assert {c.field for c in change.consequences} == {"params.lr", "program.call.lr"}
    assert loss_of(report).first_divergence_step == 1  # the first update, not the weights
    no_contradiction(report)
    # The seed-0 runs of the default recipe part nowhere: any gap is outside their noise.
    spread = loss_of(report).spread
    assert spread is not None
    assert (spread.runs, spread.parts_at, spread.outside) == (2, None, True)


def test_one_option_change_is_one_row_in_json_text_and_html(runs) -> None:
    report = report_of(runs, "seed0", "lr")
    data = report.to_dict()
    (change,) = data["differences"]
    assert sorted(c["field"] for c in change["consequences"]) == ["params.lr", "program.call.lr"]
    text = render(report, "text")
    assert RANKED.findall(text) == ["program.options.lr"]  # the one numbered row
    assert "↳ params.lr" in text
    html = render(report, "html")
    assert "↳ params.lr" in html.replace("<wbr>", "")  # a name breaks only at its dots
    assert html.count("<tr>") - html.count("<tr><th>") >= 3


def test_the_batch_size_sweep_is_one_change_and_never_a_noise_band_for_others(runs) -> None:
    sweep = report_of(runs, "batch16", "batch64")
    assert sweep.verdict == "explained"
    top = sweep.differences[0]
    assert top.field == "program.options.batch-size"
    assert "data.loaders.0.batch_size" in {c.field for c in top.consequences}
    no_contradiction(sweep)
    # The sweep's runs are seeded with 0 like the lr pair: its band still rests on the two runs
    # of its own recipe, never on the sweep's spread.
    spread = loss_of(report_of(runs, "seed0", "lr")).spread
    assert spread is not None
    assert spread.runs == 2
    # The unseeded runs' recipe (no generator for the loader) has no other run: no band, and the
    # noise column says so rather than borrowing another recipe's spread.
    report = report_of(runs, "unseeded1", "unseeded2")
    assert loss_of(report).spread is None
    assert "no band known" in render(report, "text")
    assert report.to_dict()["metrics"][0]["replicates"] is None
