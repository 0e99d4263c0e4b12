"""Controlled reruns, decorator side: MLFLOW_FINGERPRINT_APPLY forces field values on a real CPU
training and the fingerprint it records shows them; MLFLOW_FINGERPRINT_STOP_AFTER ends a real
training script cleanly at a step; bad values stop the program before training, in one line."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import mlflow
import numpy as np
import pytest
import torch
from mlflow.tracking import MlflowClient
from torch.utils.data import DataLoader, Dataset

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.model.fingerprint import Fingerprint
from mlflow_fingerprint.settings import APPLY, STOP_AFTER
from support.paths import JOBS, ROOT


def runs_of(experiment: str) -> list[Any]:
    client = MlflowClient()
    exp = client.get_experiment_by_name(experiment)
    return [] if exp is None else client.search_runs([exp.experiment_id])


def only_run(experiment: str) -> Any:
    [run] = runs_of(experiment)
    return run


def artifact_json(run_id: str, name: str) -> dict[str, Any]:
    path = mlflow.artifacts.download_artifacts(
        run_id=run_id, artifact_path=f"{layout.ARTIFACT_DIR}/{name}"
    )
    return json.loads(Path(path).read_text())


def canonical(values: dict[str, Any]) -> str:
    return json.dumps(values, sort_keys=True, separators=(",", ":"))


@pytest.fixture
def switches_off() -> Iterator[None]:
    """Deterministic algorithms and cuDNN benchmarking off for the test, as they were after it:
    an earlier test in this process may have left them on (Lightning's ``deterministic=True``
    does, for the rest of the process), and the test checks that a run puts them back."""
    cudnn = torch.backends.cudnn
    was = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        cudnn.benchmark,
    )
    torch.use_deterministic_algorithms(False)
    cudnn.benchmark = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was[0], warn_only=was[1])
        cudnn.benchmark = was[2]


@pytest.mark.usefixtures("switches_off")
def test_each_applied_field_shows_in_the_captured_fingerprint(
    sqlite_tracking_uri: str, digits: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    mkldnn: Any = torch.backends.mkldnn
    cudnn = torch.backends.cudnn
    threads = 1 if torch.get_num_threads() != 1 else 2
    before = (
        torch.are_deterministic_algorithms_enabled(),
        cudnn.benchmark,
        mkldnn.matmul.fp32_precision,
        mkldnn.conv.fp32_precision,
        torch.get_num_threads(),
        os.environ.get("NVIDIA_TF32_OVERRIDE"),
    )
    assert before[:2] == (False, False)
    applied = {
        "seeds.requested": 7,
        "determinism.deterministic_algorithms": True,
        "determinism.cudnn_benchmark": True,  # explicit: wins over what determinism implies
        "numerics.fp32_precision.mkldnn_matmul": "bf16",
        "numerics.fp32_precision.mkldnn_conv": "tf32",
        "torch.threads.intra_op": threads,
        "numerics.env.NVIDIA_TF32_OVERRIDE": "0",
        "data.num_workers": 0,
        "data.generator_seed": 123,
    }
    monkeypatch.setenv(APPLY, json.dumps(applied))
    loader, _ = digits.make_loaders(batch_size=32, num_workers=2, seed_workers=False)
    assert (loader.num_workers, loader.generator) == (2, None)

    @mfp.fingerprinted(experiment="apply", seed=0, quiet=True)  # the forced seed wins
    def train(loader: DataLoader) -> dict[str, float]:
        return digits.train(loader, epochs=1, max_steps=3)

    train(loader)

    run = only_run("apply")
    assert run.info.status == "FINISHED"
    assert run.data.tags[layout.TAG_OVERRIDES] == canonical(applied)
    assert layout.TAG_STOPPED_AT not in run.data.tags
    assert run.data.params[layout.PARAM_SEED] == "7"
    fp = Fingerprint.from_dict(artifact_json(run.info.run_id, layout.FINGERPRINT_FILE))
    assert fp.get("seeds.requested") == 7
    assert fp.get("determinism.deterministic_algorithms") is True
    assert fp.get("determinism.cudnn_benchmark") is True
    assert fp.get("numerics.fp32_precision.mkldnn_matmul") == "bf16"
    assert fp.get("numerics.fp32_precision.mkldnn_conv") == "tf32"
    assert fp.get("torch.threads.intra_op") == threads
    assert fp.get("numerics.env.NVIDIA_TF32_OVERRIDE") == "0"
    [described] = fp.get("data.loaders")
    assert described["num_workers"] == 0
    assert described["generator"] == {"present": True, "initial_seed": 123}
    assert described["batches_seen"] == 4  # digits.train reads one past max_steps, then stops
    rerun = artifact_json(run.info.run_id, layout.RUN_FILE)["rerun"]
    assert rerun["overrides"] == applied
    assert (rerun["stop_after"], rerun["stopped_at"]) == (None, None)
    # process switches are put back when the run ends; the loader keeps its forced values
    after = (
        torch.are_deterministic_algorithms_enabled(),
        cudnn.benchmark,
        mkldnn.matmul.fp32_precision,
        mkldnn.conv.fp32_precision,
        torch.get_num_threads(),
        os.environ.get("NVIDIA_TF32_OVERRIDE"),
    )
    assert after == before
    assert loader.num_workers == 0


class Augmenting(Dataset):
    """Each sample carries its index and a number drawn from the loading process's torch RNG."""

    def __len__(self) -> int:
        return 24

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.stack([torch.tensor(float(index)), torch.rand(())])


class NumpyAndPythonDrawing(Dataset):
    """Samples drawn from numpy's and python's global generators, which torch does not seed in
    the workers."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([float(index), float(np.random.rand()), random.random()])


def epochs_of(loader: DataLoader, experiment: str, epochs: int = 2) -> list[torch.Tensor]:
    """The batches of each epoch of ``loader`` in a decorated run (the loader is built outside
    the run and not passed to it: the run meets it when it is iterated)."""

    @mfp.fingerprinted(experiment=experiment, quiet=True)
    def train() -> list[torch.Tensor]:
        return [torch.cat(list(loader)) for _ in range(epochs)]

    return train()


def test_a_forced_generator_seed_makes_shuffled_augmented_workers_reproducible(
    sqlite_tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def loader() -> DataLoader:
        return DataLoader(Augmenting(), batch_size=4, shuffle=True, num_workers=2)

    free = [epochs_of(loader(), "free"), epochs_of(loader(), "free")]
    assert not torch.equal(free[0][0], free[1][0])  # nothing seeded: two runs differ

    monkeypatch.setenv(APPLY, json.dumps({"data.generator_seed": 11}))
    forced = [epochs_of(loader(), "forced"), epochs_of(loader(), "forced")]
    for a, b in zip(forced[0], forced[1], strict=True):
        assert torch.equal(a, b)  # bitwise: the order and the workers' draws alike
    first, second = forced[0]
    assert not torch.equal(first, second)  # the epochs still shuffle and draw differently
    assert sorted(first[:, 0].tolist()) == [float(i) for i in range(24)]
    for run in runs_of("forced"):
        record = artifact_json(run.info.run_id, layout.FINGERPRINT_FILE)
        [described] = record["data"]["loaders"]
        assert described["generator"] == {"present": True, "initial_seed": 11}
        assert described["num_workers"] == 2


def test_forced_worker_seeding_gives_the_workers_the_draws_of_a_seed_worker_recipe(
    sqlite_tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Since torch 1.9 the workers' numpy and python generators are seeded by torch itself
    (from the base seed), so the draws repeat whenever the base seed does; ``seed_worker``
    seeds them from another derivation of it, so a run with it draws other numbers than one
    without. Forcing it on a loader that lacks it must give exactly the draws of the run whose
    loader had it (what a rerun of A with B's seeding needs), run after run."""

    def draws(values: dict[str, Any], experiment: str, **loader: Any) -> torch.Tensor:
        monkeypatch.setenv(APPLY, json.dumps(values))
        np.random.seed(None)  # as a fresh process would: the parent's state differs each run
        random.seed()
        built = DataLoader(NumpyAndPythonDrawing(), batch_size=2, num_workers=2, **loader)
        return epochs_of(built, experiment, epochs=1)[0]

    seeded = {"seeds.requested": 3}
    recipe = draws(seeded, "recipe", worker_init_fn=mfp.seed_worker)
    plain = draws(seeded, "plain")
    forced = {**seeded, "data.worker_seeding": True}
    a, b = draws(forced, "forced"), draws(forced, "forced")
    assert torch.equal(a, recipe)
    assert torch.equal(a, b)
    assert not torch.equal(a, plain)
    assert len(set(a[:, 1].tolist())) == len(a)  # each worker (and each sample) draws its own
    for run in runs_of("forced"):
        record = artifact_json(run.info.run_id, layout.FINGERPRINT_FILE)
        [described] = record["data"]["loaders"]
        assert described["worker_init_fn"] == "mlflow_fingerprint.run.seeding.seed_worker"


def _job(
    tmp_path: Path,
    env: dict[str, str],
    timeout: float = 300,
    command: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``tests/jobs/stop_after_digits.py`` (or ``command``) in a process of its own, importing
    this checkout's package (a relative PYTHONPATH would not survive the change of directory)."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(
        command or [sys.executable, str(JOBS / "stop_after_digits.py"), str(out)],
        cwd=tmp_path,
        env={
            **os.environ,
            "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
            "MLFLOW_FINGERPRINT_SPOOL": str(tmp_path / "spool"),
            "PYTHONPATH": path,
            **env,
        },
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_stop_after_ends_a_real_training_script_finished_at_the_first_step_past_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    applied = {"seeds.requested": 11, "torch.threads.inter_op": 3}
    done = _job(tmp_path, {STOP_AFTER: "4", APPLY: json.dumps(applied)})
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "out"
    assert (out / "trained").exists()
    for skipped in ("after_loop", "after_train", "swallowed"):
        assert not (out / skipped).exists(), skipped

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = only_run("stop")
    assert run.info.status == "FINISHED"
    assert run.data.tags[layout.TAG_STOPPED_AT] == "5"
    assert run.data.tags[layout.TAG_OVERRIDES] == canonical(applied)
    history = MlflowClient().get_metric_history(run.info.run_id, "loss")
    assert sorted(m.step for m in history) == [0, 1, 2, 3, 4, 5]  # each once, 5 included
    record = artifact_json(run.info.run_id, layout.FINGERPRINT_FILE)
    assert record["seeds"]["requested"] == 11
    assert record["torch"]["threads"]["inter_op"] == 3  # a fresh process: torch allows it
    rerun = artifact_json(run.info.run_id, layout.RUN_FILE)["rerun"]
    assert (rerun["stop_after"], rerun["stopped_at"]) == (4, 5)
    assert list((tmp_path / "spool").glob("*")) == []  # everything reached the store


def test_a_run_stopped_early_keeps_the_steps_it_watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rerun watches the step where two runs part and stops just after it: the steps
    ``mfp.watch`` recorded must reach the run. Found on an H100: the stop wrapped the run's writer
    and the watch's records were dropped with "'StoppingSink' object has no attribute"."""
    script = JOBS / "gpu_truth" / "train.py"
    command = [sys.executable, str(script), "--device", "cpu", "--steps", "12"]
    done = _job(tmp_path, {STOP_AFTER: "3", "MLFLOW_FINGERPRINT_QUIET": "1"}, command=command)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "no attribute" not in done.stderr, done.stderr[-3000:]

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = only_run("gpu-truth")
    assert run.data.tags[layout.TAG_STOPPED_AT] == "4"
    path = mlflow.artifacts.download_artifacts(
        run_id=run.info.run_id, artifact_path=layout.STEPS_ARTIFACT
    )
    lines = [json.loads(line) for line in Path(path).read_text().splitlines()]
    assert {line["step"] for line in lines} == {0, 1, 2, 4}  # the default steps it reached
    assert {line["phase"] for line in lines if line["step"] == 2} == {
        "forward",
        "backward",
        "optimizer",
    }


def test_a_bad_value_is_one_line_and_nothing_is_trained_in_a_script(tmp_path: Path) -> None:
    done = _job(tmp_path, {APPLY: '{"data.num_workers": "two"}'})
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [
        f"mlflow-fingerprint: {APPLY}: data.num_workers must be an integer, got 'two'"
    ], done.stderr
    assert not (tmp_path / "out" / "trained").exists()


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        (APPLY, "seed=3", "is not JSON"),
        (APPLY, '{"gpu.name": "A100"}', "'gpu.name' is not a field a rerun can set"),
        (APPLY, '{"determinism.cudnn_benchmark": "yes"}', "cudnn_benchmark must be true or"),
        (STOP_AFTER, "last", "must be a step"),
        (STOP_AFTER, "-2", "must be a step"),
    ],
)
def test_bad_values_stop_both_forms_before_training(
    sqlite_tracking_uri: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    text: str,
    says: str,
) -> None:
    monkeypatch.setenv(name, text)
    trained: list[bool] = []

    @mfp.fingerprinted(experiment="bad", quiet=True)
    def train() -> None:
        trained.append(True)

    with pytest.raises(SystemExit) as caught:
        train()
    assert caught.value.code == 2
    with pytest.raises(SystemExit), mfp.fingerprinted(experiment="bad", quiet=True):
        trained.append(True)
    assert trained == []
    assert runs_of("bad") == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2, err
    assert err[0] == err[1]
    assert err[0].startswith(f"mlflow-fingerprint: {name}")
    assert says in err[0]


def test_stop_after_in_the_with_form_passes_a_loops_except_and_exits_zero(
    sqlite_tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STOP_AFTER, "2")
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    reached: list[int] = []
    swallowed: list[BaseException] = []

    def train() -> None:
        with mfp.fingerprinted(experiment="with", quiet=True):
            for step in range(10):
                try:
                    loss = torch.nn.functional.mse_loss(model(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    mfp.log_metrics({"loss": loss.item()}, step=step)
                    mfp.log_metrics({"lr": 0.1})  # no step: never a reason to stop
                except Exception as exc:
                    swallowed.append(exc)
                reached.append(step)

    with pytest.raises(SystemExit) as caught:
        train()
    assert caught.value.code == 0
    assert swallowed == []
    assert reached == [0, 1, 2]  # step 3 was logged, and nothing after it ran
    run = only_run("with")
    assert run.info.status == "FINISHED"
    assert run.data.tags[layout.TAG_STOPPED_AT] == "3"
    assert layout.TAG_OVERRIDES not in run.data.tags
    steps = [m.step for m in MlflowClient().get_metric_history(run.info.run_id, "loss")]
    assert sorted(steps) == [0, 1, 2, 3]


def test_a_stop_inside_a_nested_run_ends_both_runs_finished(
    sqlite_tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STOP_AFTER, "0")
    after_inner: list[bool] = []

    @mfp.fingerprinted(experiment="nested", run_name="outer", quiet=True)
    def train() -> None:
        with mfp.fingerprinted(run_name="inner", quiet=True):
            mfp.log_metrics({"loss": 1.0}, step=0)
            mfp.log_metrics({"loss": 0.5}, step=1)
        after_inner.append(True)

    with pytest.raises(SystemExit) as caught:
        train()
    assert caught.value.code == 0
    assert after_inner == []
    runs = {r.info.run_name: r for r in runs_of("nested")}
    assert set(runs) == {"outer", "inner"}
    for run in runs.values():
        assert run.info.status == "FINISHED"
        assert run.data.tags[layout.TAG_STOPPED_AT] == "1"
    assert runs["inner"].data.metrics == {"loss": 0.5}
