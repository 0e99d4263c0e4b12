"""``mfp.watch``: exact digests of a step's tensors, and the first one where two runs part.

Real trainings of the digits CNN on CPU (30 steps each), recorded in a real sqlite store; the
report must name the change each pair was made with, at the step and phase where it acts.
"""

from __future__ import annotations

import importlib
import itertools
import json
import random
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import mlflow_fingerprint as mfp
from mlflow_fingerprint.errors import FingerprintWarning
from mlflow_fingerprint.model.watched import decode
from mlflow_fingerprint.run.digest import Weights, reduce
from mlflow_fingerprint.run.watch import default_steps
from support.gitrepo import git
from support.records import new_store

STEPS = 30
LR_CHANGE = 20
WATCHED = (0, 1, 2, LR_CHANGE, LR_CHANGE + 1)
LAYER_V1 = '''
from torch import nn


class Conv(nn.Conv2d):
    """The second convolution of the digits CNN."""

    def forward(self, x):
        return super().forward(x)
'''
LAYER_V2 = LAYER_V1.replace("return super().forward(x)", "return super().forward(x) * 1.0001")


def optimizer_hooks() -> int:
    from torch.optim import optimizer

    return len(optimizer._global_optimizer_post_hooks)


def hook_count(model: nn.Module) -> int:
    """Every hook on the model's modules and parameters."""
    count = 0
    for module in model.modules():
        count += len(module._forward_hooks) + len(module._forward_pre_hooks)
    for p in model.parameters():
        count += len(p._post_accumulate_grad_hooks or {})
    return count


def train(
    digits,
    uri: str,
    name: str,
    *,
    seed: int = 0,
    lr_scale_from: int | None = None,
    threads: int | None = None,
    conv: type[nn.Module] | None = None,
    watched: tuple[int, ...] = WATCHED,
) -> str:
    """30 steps of Adam on the digits CNN, the data order fixed whatever the seed; the run id."""

    def run() -> None:
        if threads is not None:
            torch.set_num_threads(threads)
        model = digits.DigitsCNN()
        if conv is not None:  # the same weights and random stream, another forward
            state = torch.get_rng_state()
            replacement = conv(32, 64, 3, padding=1)
            replacement.load_state_dict(model.features[3].state_dict())
            model.features[3] = replacement
            torch.set_rng_state(state)
        loader = torch.utils.data.DataLoader(
            digits.Digits(train=True),
            batch_size=64,
            shuffle=True,
            generator=torch.Generator().manual_seed(0),
        )
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        watch = mfp.watch(model, steps=watched)
        loss_fn = nn.CrossEntropyLoss()
        for step, (x, y) in enumerate(loader):
            if step == STEPS:
                break
            if step == lr_scale_from:
                for group in optimizer.param_groups:
                    group["lr"] *= 1.001
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            mfp.log_metrics({"loss": loss.item()}, step=step)
        assert watch.closed  # past the last watched step: every hook is gone
        assert hook_count(model) == 0

    threads_before = torch.get_num_threads()
    try:
        with mfp.fingerprinted(experiment="watch", run_name=name, seed=seed, tracking_uri=uri) as r:
            run()
    finally:
        torch.set_num_threads(threads_before)
    return str(r.run_id)


# -- the digest ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.uint8]
)
def test_every_single_flipped_bit_changes_the_digest(dtype):
    weights = Weights()
    rng = random.Random(0)
    base = (torch.randn(70_001) * 100).to(dtype)  # more than one row of words, and a tail
    digest, _ = reduce(base, weights).value()
    raw = base.view(torch.uint8)
    for _ in range(200):
        flipped = raw.clone()
        i = rng.randrange(raw.numel())
        flipped[i] ^= 1 << rng.randrange(8)
        assert reduce(flipped.view(dtype), weights).value()[0] != digest


def test_the_digest_sees_order_and_shape_and_not_the_thread_count():
    weights = Weights()
    x = torch.randn(300, 500)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = reduce(x, weights).value()
        torch.set_num_threads(2)
        two = reduce(x, weights).value()
    finally:
        torch.set_num_threads(threads)
    assert one == two
    swapped = x.clone()
    swapped[0, 0], swapped[0, 1] = x[0, 1], x[0, 0]
    assert reduce(swapped, weights).value()[0] != one[0]
    transposed = reduce(x.t(), weights)  # same values, another layout and shape
    assert transposed.shape == (500, 300)
    assert transposed.value()[0] != one[0]
    assert one[1] == pytest.approx(float(torch.linalg.vector_norm(x.double())), rel=1e-5)


def test_default_steps_are_the_first_three_and_powers_of_two_capped():
    steps = default_steps()
    assert steps[:5] == (0, 1, 2, 4, 8)
    assert len(steps) == 12
    assert all(b == 2 * a for a, b in itertools.pairwise(steps[3:]))


# -- installing nothing, and removing everything ---------------------------------------------


@pytest.fixture
def uri(tmp_path, mlflow_db_template, monkeypatch):
    monkeypatch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(tmp_path / "spool"))
    return store_with_experiment(tmp_path, mlflow_db_template)


def store_with_experiment(folder: Path, template: Path) -> str:
    """A store of its own whose experiment keeps its artifacts in ``folder``."""
    from mlflow import MlflowClient

    uri = new_store(folder, template)
    MlflowClient(uri).create_experiment("watch", artifact_location=(folder / "art").as_uri())
    return uri


def test_watching_no_step_installs_no_hook(uri):
    before = optimizer_hooks()

    @mfp.fingerprinted(experiment="watch", seed=0, tracking_uri=uri)
    def run() -> None:
        model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1))
        watch = mfp.watch(model, steps=())
        assert watch.closed
        assert hook_count(model) == 0
        assert optimizer_hooks() == before

    run()


def test_watch_outside_a_run_warns_and_installs_nothing():
    model = nn.Linear(4, 3)
    before = optimizer_hooks()
    with pytest.warns(FingerprintWarning, match="outside a fingerprinted run"):
        watch = mfp.watch(model)
    assert watch.closed
    assert (hook_count(model), optimizer_hooks()) == (0, before)


def test_the_run_ending_removes_the_hooks_of_steps_never_reached(uri):
    before = optimizer_hooks()
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1))

    @mfp.fingerprinted(experiment="watch", seed=0, tracking_uri=uri)
    def run() -> None:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        mfp.watch(model, steps=[0, 1000])
        assert hook_count(model) > 0
        assert optimizer_hooks() == before + 1
        for _ in range(3):
            optimizer.zero_grad()
            model(torch.randn(8, 4)).sum().backward()
            optimizer.step()

    run()
    assert (hook_count(model), optimizer_hooks()) == (0, before)


def test_the_records_are_in_execution_order_and_reach_the_run(uri):
    from mlflow import MlflowClient

    from mlflow_fingerprint import layout

    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1))

    with mfp.fingerprinted(experiment="watch", seed=0, tracking_uri=uri) as run:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        mfp.watch(model, steps=[1, 4])
        for _ in range(5):
            optimizer.zero_grad()
            model(torch.randn(8, 4)).sum().backward()
            optimizer.step()
            with torch.no_grad():  # an evaluation pass is no part of the step
                model(torch.randn(2, 4))
    run_id = run.run_id
    client = MlflowClient(uri)
    local = client.download_artifacts(run_id, layout.STEPS_ARTIFACT, str(Path(uri[10:]).parent))
    records = decode(Path(local).read_bytes())
    assert sorted({r.step for r in records}) == [1, 4]
    step1 = [(r.phase, r.module, r.tensor) for r in records if r.step == 1]
    assert step1[:8] == [
        ("forward", "", "input"),
        ("forward", "0", "input"),
        ("forward", "0", "output"),
        ("forward", "1", "input"),
        ("forward", "1", "output"),
        ("forward", "2", "input"),
        ("forward", "2", "output"),
        ("forward", "", "output"),
    ]
    # backward reaches the last layer first; the update follows the parameters' order
    assert step1[8:] == [
        ("backward", "2", "bias"),
        ("backward", "2", "weight"),
        ("backward", "0", "bias"),
        ("backward", "0", "weight"),
        ("optimizer", "0", "weight"),
        ("optimizer", "0", "bias"),
        ("optimizer", "2", "weight"),
        ("optimizer", "2", "bias"),
    ]
    kinds = {(r.module, r.kind) for r in records}
    assert {("", "Sequential"), ("0", "Linear"), ("1", "ReLU")} <= kinds
    # the last update recorded is the weight the training ended with, bit for bit
    last = next(r for r in records if r.key == (4, "optimizer", "2", "weight", 0))
    digest, norm = reduce(model[2].weight, Weights()).value()
    assert (last.digest, last.norm) == (digest, norm)


# -- a step the run ends inside, and the rerun's steps ------------------------------------------


class EndsHere(Exception):
    """Raised by ``small_training`` between a step's backward pass and its update."""


def small_training(
    uri: str, name: str, watched: tuple[int, ...] = (0, 2), end_inside: int | None = None
) -> str:
    """4 steps of SGD on a small MLP, the same weights and batches in every run; ``end_inside``:
    that step's update never happens (an exception after its backward pass ends the run)."""
    g = torch.Generator().manual_seed(1)
    batches = [torch.randn(8, 4, generator=g) for _ in range(4)]
    try:
        with mfp.fingerprinted(experiment="watch", run_name=name, seed=0, tracking_uri=uri) as run:
            model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            mfp.watch(model, steps=watched)
            for step, x in enumerate(batches):
                optimizer.zero_grad()
                model(x).sum().backward()
                if step == end_inside:
                    raise EndsHere
                optimizer.step()
    except EndsHere:
        pass
    return str(run.run_id)


def stored_records(uri: str, run_id: str, artifact: str | None = None):
    from mlflow import MlflowClient

    from mlflow_fingerprint import layout

    folder = Path(uri.removeprefix("sqlite:///")).parent / run_id
    folder.mkdir(exist_ok=True)
    local = MlflowClient(uri).download_artifacts(
        run_id, artifact or layout.STEPS_ARTIFACT, str(folder)
    )
    return decode(Path(local).read_bytes())


def test_a_step_the_run_ends_inside_is_kept_partial_and_not_read_as_a_difference(uri):
    from mlflow import MlflowClient

    from mlflow_fingerprint.compare.where import locate

    whole = stored_records(uri, small_training(uri, "whole"))
    ended_id = small_training(uri, "ended", end_inside=2)
    assert MlflowClient(uri).get_run(ended_id).info.status == "FAILED"
    ended = stored_records(uri, ended_id)
    # step 0 completed: every phase, not partial; step 2 as far as it got, marked partial
    assert {r.phase for r in ended if r.step == 0} == {"forward", "backward", "optimizer"}
    assert not any(r.partial for r in ended if r.step == 0)
    step2 = [r for r in ended if r.step == 2]
    assert list(dict.fromkeys(r.phase for r in step2)) == ["forward", "backward"]
    assert all(r.partial for r in step2)
    assert not any(r.partial for r in whole)
    # what the ended run recorded is what the whole run computed, bit for bit
    same = {r.key: r for r in whole}
    assert all(r.same_tensor(same[r.key]) for r in ended)
    # its missing update is not a difference, in either order; the note says what was compared
    for a, b, label in ((whole, ended, "B"), (ended, whole, "A")):
        found, note = locate(a, b, 2)
        assert found is None
        assert f"run {label} ended inside step 2 (it recorded forward, backward only)" in note
        assert note.startswith("every tensor both runs recorded is equal up to step 2")


def test_the_rerun_variable_adds_its_steps_and_a_bad_value_is_ignored_with_one_warning(
    uri, monkeypatch
):
    import warnings

    from mlflow_fingerprint.settings import WATCH_STEPS

    monkeypatch.setenv(WATCH_STEPS, "3, 1")
    assert {r.step for r in stored_records(uri, small_training(uri, "rerun", (0,)))} == {0, 1, 3}
    # the step where the curves part is watched even where the program watches no step
    monkeypatch.setenv(WATCH_STEPS, "3")
    assert {r.step for r in stored_records(uri, small_training(uri, "rerun", ()))} == {3}
    monkeypatch.setenv(WATCH_STEPS, "3;rerun")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_id = small_training(uri, "bad", (0,))
    said = [str(w.message) for w in caught if WATCH_STEPS in str(w.message)]
    assert len(said) == 1, said
    assert "'3;rerun' is not valid" in said[0]
    assert {r.step for r in stored_records(uri, run_id)} == {0}  # training and watch went on


# -- where real trainings part ------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(digits, tmp_path_factory, mlflow_db_template):
    root = tmp_path_factory.mktemp("watch")
    uri = store_with_experiment(root, mlflow_db_template)
    repo = root / "repo"
    repo.mkdir()
    (repo / "layers.py").write_text(LAYER_V1)
    git(repo, "init", "-q")
    git(repo, "add", "layers.py")
    git(repo, "commit", "-q", "-m", "layers")
    import mlflow

    ids = {"uri": uri}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(repo)
        patch.syspath_prepend(str(repo))
        patch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(root / "spool"))
        try:
            ids["a"] = train(digits, uri, "a")
            ids["lr"] = train(digits, uri, "lr", lr_scale_from=LR_CHANGE)
            ids["seed1"] = train(digits, uri, "seed1", seed=1)
            ids["threads1"] = train(digits, uri, "threads1", threads=1)
            ids["threads2"] = train(digits, uri, "threads2", threads=2)
            layers = importlib.import_module("layers")
            ids["layer_v1"] = train(digits, uri, "layer_v1", conv=layers.Conv)
            (repo / "layers.py").write_text(LAYER_V2)
            git(repo, "commit", "-q", "-am", "scale the second convolution")
            layers = importlib.reload(layers)
            ids["layer_v2"] = train(digits, uri, "layer_v2", conv=layers.Conv)
        finally:
            sys.modules.pop("layers", None)
            mlflow.set_tracking_uri(None)
    return ids


def loss_of(runs, a: str, b: str):
    report = mfp.diff(runs[a], runs[b], tracking_uri=runs["uri"])
    return report, next(m for m in report.metrics if m.name == "loss")


def test_a_learning_rate_changed_at_step_20_parts_in_the_optimizer_of_step_20(runs):
    report, loss = loss_of(runs, "a", "lr")
    assert loss.first_divergence_step == LR_CHANGE + 1
    where = loss.where
    assert (where.step, where.phase) == (LR_CHANGE, "optimizer")
    assert (where.inputs, where.inputs_equal) == ("gradients", True)
    assert where.module == "features.0"
    assert where.kind == "Conv2d"
    assert where.rel_diff is not None
    assert 0 < where.rel_diff < 1e-3
    data = report.to_dict()["metrics"]
    row = next(m for m in data if m["name"] == "loss")
    assert row["first_divergence_step"] == LR_CHANGE + 1
    assert row["first_divergence"]["where"]["phase"] == "optimizer"
    assert row["first_divergence"]["where"]["inputs_equal"] is True


def test_another_seed_parts_at_step_0_in_the_first_layer_with_equal_data(runs):
    _, loss = loss_of(runs, "a", "seed1")
    assert loss.first_divergence_step == 0
    where = loss.where
    assert (where.step, where.phase, where.module, where.tensor) == (
        0,
        "forward",
        "features.0",
        "output",
    )
    assert where.inputs_equal is True  # the same batch, other initial weights


def test_a_layer_whose_forward_changed_is_the_first_module_that_differs(runs):
    report, loss = loss_of(runs, "layer_v1", "layer_v2")
    assert loss.first_divergence_step == 0
    where = loss.where
    assert (where.step, where.phase, where.module, where.kind, where.tensor) == (
        0,
        "forward",
        "features.3",
        "Conv",
        "output",
    )
    assert where.inputs_equal is True
    assert where.rel_diff == pytest.approx(1e-4, rel=0.05)
    assert "git.commit" in {d.field for d in report.differences}


def test_the_thread_count_parts_where_the_curves_say_or_nowhere(runs):
    _, loss = loss_of(runs, "threads1", "threads2")
    if loss.bitwise_equal:  # this CPU computes the same bits with 1 and 2 threads
        assert loss.first_divergence_step is None
        assert loss.where is None
        return
    where = loss.where
    assert where is not None
    assert where.step <= loss.first_divergence_step
    # a kernel computed differently: what went into the first differing tensor was equal
    assert where.inputs_equal is True
    assert where.phase in ("forward", "backward")


def test_identical_runs_have_no_where(runs, digits):
    report = mfp.diff(runs["a"], runs["layer_v1"], tracking_uri=runs["uri"])
    loss = next(m for m in report.metrics if m.name == "loss")
    # the layer's first version computes what nn.Conv2d does: same numbers, nothing to locate
    assert loss.bitwise_equal
    assert loss.where is None
    assert (
        json.loads(json.dumps(report.to_dict()))["metrics"][0]["first_divergence"]["where"] is None
    )


def test_the_command_line_report_says_where_in_every_format(runs, capsys):
    from mlflow_fingerprint.cli.main import main

    def report(fmt: str) -> str:
        code = main(["diff", runs["a"], runs["lr"], "--tracking-uri", runs["uri"], "--format", fmt])
        assert code == 1
        return capsys.readouterr().out

    said = "loss parts at step 21: step 20, optimizer: features.0.weight (Conv2d) differs; "
    said += "the step's gradients are equal"
    assert said in " ".join(report("text").split())  # the text report wraps at 100 columns
    assert said in report("markdown")
    page = report("html")
    assert "<h2>Where the curves part</h2>" in page
    assert '<span class="equal-no">no</span>' in page
    assert '<span class="equal-yes">yes</span>' not in page  # the first differing is the first
    row = next(m for m in json.loads(report("json"))["metrics"] if m["name"] == "loss")
    assert row["first_divergence_step"] == LR_CHANGE + 1
    where = row["first_divergence"]["where"]
    assert (where["step"], where["phase"], where["module"], where["type"]) == (
        LR_CHANGE,
        "optimizer",
        "features.0",
        "Conv2d",
    )
    assert where["around"][0] == {
        "phase": "optimizer",
        "tensor": "features.0.weight",
        "type": "Conv2d",
        "equal": False,
        "rel_diff": where["rel_diff"],
    }


def test_a_compiled_model_is_watched_under_its_own_module_paths(uri):
    from mlflow import MlflowClient

    from mlflow_fingerprint import layout

    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1))
    with mfp.fingerprinted(experiment="watch", seed=0, tracking_uri=uri) as run:
        compiled = torch.compile(model, backend="eager")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        mfp.watch(compiled, steps=[0, 2])
        for _ in range(3):
            optimizer.zero_grad()
            compiled(torch.randn(8, 4)).sum().backward()
            optimizer.step()
    local = MlflowClient(uri).download_artifacts(
        run.run_id, layout.STEPS_ARTIFACT, str(Path(uri[10:]).parent)
    )
    records = decode(Path(local).read_bytes())
    # step 0, hooked before the first compile: every phase, under the module's own paths
    first = [r for r in records if r.step == 0]
    assert {r.module for r in first} == {"", "0", "1", "2"}
    assert {r.phase for r in first} == {"forward", "backward", "optimizer"}
    # a later step: gradients and updates, whatever Dynamo does with the forward hooks
    assert {"backward", "optimizer"} <= {r.phase for r in records if r.step == 2}


def test_a_divergence_at_an_unwatched_step_is_said_and_not_guessed(runs):
    from mlflow import MlflowClient

    from mlflow_fingerprint.compare.where import locate
    from mlflow_fingerprint.tracking import numerics_steps

    client = MlflowClient(runs["uri"])
    a, _ = numerics_steps.read(client, runs["uri"], runs["a"], "A")
    b, _ = numerics_steps.read(client, runs["uri"], runs["lr"], "B")
    early = [r for r in a if r.step <= 2], [r for r in b if r.step <= 2]
    found, note = locate(*early, LR_CHANGE + 1)
    assert found is None
    assert note.startswith(f"step {LR_CHANGE + 1}, where the curves part, was not watched")
    assert "watched by both up to it: 0, 1, 2" in note
    # watched there, the first difference is named; every tensor before the update is equal
    found, note = locate(a, b, LR_CHANGE + 1)
    assert note is None
    assert all(n.equal is False for n in found.around)
    forward = [r for r in a if r.step == LR_CHANGE and r.phase != "optimizer"]
    others = {r.key: r for r in b}
    assert all(r.same_tensor(others[r.key]) for r in forward)
