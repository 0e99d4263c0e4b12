"""What step 0 started from, measured and reasoned from (issue 44): examples/quickstart.py, the
README's decorator example written out, run as a user runs it, and a forward computation that
differs with equal weights and batch.

The quickstart's runs are processes of their own (a model built at module level draws from the
seed torch takes from the OS at start-up, which only a fresh process shows), run side by side.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from mlflow_fingerprint import diff
from mlflow_fingerprint.audit import audit
from mlflow_fingerprint.compare.resolve import resolve
from mlflow_fingerprint.model.fingerprint import get_path
from mlflow_fingerprint.present.html import render as render_html
from mlflow_fingerprint.present.text import render_brief, render_plain
from support.lanes import Job, Lanes
from support.paths import EXAMPLES, ROOT
from support.records import new_store

pytestmark = pytest.mark.timeout(900)
QUICKSTART = EXAMPLES / "quickstart.py"
RUN_ID = re.compile(r"mlflow-fingerprint: run ([0-9a-f]{32}) ")
# name -> the quickstart's arguments
RUNS = {
    "seeded_1": [],
    "seeded_2": [],
    "late_1": ["--seed-late"],
    "late_2": ["--seed-late"],
    "late_lr": ["--seed-late", "--lr", "0.05"],
}


@pytest.fixture(scope="module")
def quickstart(
    tmp_path_factory: pytest.TempPathFactory, mlflow_db_template: Path
) -> tuple[str, dict[str, str]]:
    """The quickstart's runs in one store: (its URI, run id by name)."""
    folder = tmp_path_factory.mktemp("quickstart")
    uri = new_store(folder, mlflow_db_template)
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "MLFLOW_FINGERPRINT_SPOOL": str(folder / "s")}
    lanes = Lanes(
        {
            name: Job([sys.executable, str(QUICKSTART), *args], cwd=folder, env=env)
            for name, args in RUNS.items()
        }
    )
    ids = {}
    for name in RUNS:
        done = lanes.result(name)
        assert done.returncode == 0, done.stderr[-3000:]
        (ids[name],) = RUN_ID.findall(done.stderr)
    lanes.close()
    return uri, ids


def _reports(uri: str, a: str, b: str) -> tuple[Any, str, dict[str, Any], str]:
    report = diff(a, b, tracking_uri=uri)
    data = report.to_dict()
    text = render_brief(report) + render_plain(report, include_none=True)
    return report, text, data, render_html(report)


def _record(uri: str, run_id: str) -> Any:
    return resolve(run_id, tracking_uri=uri).record


def test_model_built_before_the_seed_is_named_with_its_fix(
    quickstart: tuple[str, dict[str, str]],
) -> None:
    uri, ids = quickstart
    report, text, data, html = _reports(uri, ids["late_1"], ids["late_2"])
    assert report.verdict == "nondeterministic"
    first = report.enablers[0]
    assert first.field == "first_step.before_seeding"
    assert "initial weights were drawn before seeding" in first.explanation
    assert "mfp.seed_everything(0) at the top of the script" in first.fix
    assert "build the model inside train()" in first.fix
    for shown in (text, json.dumps(data), html):
        assert "initial weights were drawn before seeding" in shown
        assert "mfp.seed_everything(0) at the top of the script" in shown
    assert data["verdict"] == "nondeterministic"
    # measured: other weights, the same first batch
    ra, rb = (_record(uri, ids[n]) for n in ("late_1", "late_2"))
    assert get_path(ra, "first_step.weights.digest") != get_path(rb, "first_step.weights.digest")
    assert get_path(ra, "first_step.batch.digest") == get_path(rb, "first_step.batch.digest")
    # measured: none of the parameters the first step updated was made after the seed
    made = get_path(ra, "first_step.made_after_seeding")
    assert made["count"] == 0, made
    assert made["of"] > 0, made
    found = audit(ra)
    (seeds,) = [f for f in found.findings if f.check == "seeds"]
    assert seeds.severity == "high"
    assert "drawn before the seed was set" in seeds.finding
    assert f"{made['of']} of the {made['of']} parameters" in seeds.finding
    assert not any(p.startswith("seeds") for p in found.passed)


def test_seeded_first_the_quickstart_is_bitwise_equal_without_a_warning(
    quickstart: tuple[str, dict[str, str]],
) -> None:
    uri, ids = quickstart
    report, text, _, _ = _reports(uri, ids["seeded_1"], ids["seeded_2"])
    assert report.verdict == "same_results"
    assert all(m.bitwise_equal for m in report.metrics)
    assert "drawn before" not in text
    record = _record(uri, ids["seeded_1"])
    assert get_path(record, "first_step.before_seeding.torch") == {
        "drawn": True,  # the model, drawn after mfp.seed_everything(0): from a chosen seed
        "seed": 0,
        "seed_chosen": True,
    }
    assert get_path(record, "first_step.recorded_by") == "torch.optim"
    # an eager training: at its first step Dynamo (which the optimizer imports) had compiled
    # nothing, and torch.compile had never been asked for
    assert get_path(record, "first_step.compiled") == {"ran": False, "backend": None, "mode": None}
    # the model was made before the decorator seeded (at module level), but drawn from the
    # seed the script chose first: made before that seeding, and no threat
    made = get_path(record, "first_step.made_after_seeding")
    assert made["count"] == 0, made
    assert made["of"] > 0, made
    assert any(p.startswith("seeds") for p in audit(record).passed)


def test_lr_pair_names_the_weights_for_step_0_and_the_lr_after(
    quickstart: tuple[str, dict[str, str]],
) -> None:
    uri, ids = quickstart
    report, text, data, html = _reports(uri, ids["late_1"], ids["late_lr"])
    loss = next(m for m in report.metrics if m.name == "loss")
    assert loss.first_divergence_step == 0
    assert report.verdict == "explained"
    first, second = report.differences[:2]
    assert first.field == "first_step.weights.digest"
    assert "drawn before the seed was set" in first.explanation
    assert second.field == "program.options.lr"
    assert second.explanation.startswith("Acts only through updates, so not why")
    assert "it explains the steps after it" in second.explanation
    assert "most likely first_step.weights.digest" in text
    assert data["differences"][0]["field"] == "first_step.weights.digest"
    assert "first_step.weights.digest" in html


def test_readme_shows_the_quickstart_verbatim() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## The decorator", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert block == QUICKSTART.read_text()


def test_equal_weights_and_batch_with_other_threads_names_the_forward_computation(
    sqlite_tracking_uri: str,
) -> None:
    """One model built inside the run (seeded), one batch, only the thread count differs: the
    mean over 400,000 values is summed in other chunks, so step 0 differs, from the forward."""
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    import mlflow_fingerprint as mfp

    values = torch.randn(4, 200_000, generator=torch.Generator().manual_seed(1))
    loader = DataLoader(TensorDataset(values), batch_size=2)

    def train(threads: int) -> str:
        torch.set_num_threads(threads)
        with mfp.fingerprinted(experiment="forward", seed=0) as run:
            model = torch.nn.Linear(1, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
            for step, (x,) in enumerate(loader):
                loss = model(x.unsqueeze(-1)).pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                run.log_metrics({"loss": loss.item()}, step=step)
        assert run.run_id is not None
        return run.run_id

    before = torch.get_num_threads()
    try:
        a, b = train(1), train(4)
    finally:
        torch.set_num_threads(before)
    report, text, data, html = _reports(sqlite_tracking_uri, a, b)
    assert report.metrics[0].first_divergence_step == 0
    ra, rb = (_record(sqlite_tracking_uri, r) for r in (a, b))
    for part in ("weights", "batch"):
        assert get_path(ra, f"first_step.{part}.digest") == get_path(
            rb, f"first_step.{part}.digest"
        )
    for shown in (text, json.dumps(data), html):
        assert "the forward computation differs" in shown
        assert "Seeds and data are ruled out" in shown
    assert report.verdict == "explained"
    assert report.differences[0].field == "torch.threads.intra_op"


def test_the_optimizer_hook_records_the_first_step_and_then_waits_for_nothing() -> None:
    """One hook for the process, registered at the first run and never removed (removing it
    while another thread steps breaks that training); after the first step no run waits."""
    import torch
    import torch.optim.optimizer as optimizer_module

    from mlflow_fingerprint.capture.first_step import weights_record
    from mlflow_fingerprint.run.first_step import FirstStepRecorder, waiting

    model = torch.nn.Linear(3, 2)
    initial = weights_record([list(model.parameters())], torch)["digest"]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    recorder = FirstStepRecorder().start()
    hooks = len(optimizer_module._global_optimizer_pre_hooks)
    try:
        assert waiting() == 1
        model(torch.ones(1, 3)).sum().backward()
        optimizer.step()
        assert waiting() == 0
        optimizer.step()
        again = FirstStepRecorder().start()  # a second run reuses the one hook
        again.stop()
        assert len(optimizer_module._global_optimizer_pre_hooks) == hooks
        assert waiting() == 0
    finally:
        recorder.stop()
    first = recorder.record()
    assert first is not None
    assert first["recorded_by"] == "torch.optim"
    assert first["weights"]["digest"] == initial  # before the update
    assert first["batch"] == {"unavailable": "no batch was seen before the first step"}


def test_an_earlier_draw_in_the_process_is_no_threat_where_the_model_is_made_after_the_seed(
    sqlite_tracking_uri: str,
) -> None:
    """A notebook or an in-process sweep: torch's generator was drawn from its OS seed by an
    earlier training when this run is seeded. Whether the weights were drawn before the seed is
    then measured (which parameters a module registered after it), not guessed from the
    generator: a model built inside the run passes the audit; one built before it is named."""
    import torch

    import mlflow_fingerprint as mfp

    def train(model: torch.nn.Module | None) -> Any:
        with mfp.fingerprinted(experiment="in-process", seed=0) as run:
            model = model if model is not None else torch.nn.Linear(4, 2)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            loss = model(torch.ones(3, 4)).pow(2).mean()
            loss.backward()
            optimizer.step()
            run.log_metrics({"loss": loss.item()}, step=0)
        return _record(sqlite_tracking_uri, str(run.run_id))

    torch.seed()  # an OS-drawn seed, as a fresh process has
    torch.randn(8)  # an earlier training drew from it
    inside = train(None)
    assert get_path(inside, "first_step.before_seeding.torch.drawn") is True
    assert get_path(inside, "first_step.before_seeding.torch.seed_chosen") is False
    assert get_path(inside, "first_step.made_after_seeding") == {"count": 2, "of": 2}
    found = audit(inside)
    assert "seeds: seeded with 0" in found.passed
    assert not [f for f in found.findings if f.check == "seeds"]

    torch.seed()
    before = train(torch.nn.Linear(4, 2))  # built above the seeding
    assert get_path(before, "first_step.made_after_seeding") == {"count": 0, "of": 2}
    (seeds,) = [f for f in audit(before).findings if f.check == "seeds"]
    assert "2 of the 2 parameters the first optimizer step updated were made before it" in (
        seeds.finding
    )
