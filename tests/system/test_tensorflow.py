"""Real TensorFlow (the CPU wheel): capture never imports it, the Keras callback records its fit,
``fingerprinted`` and ``seed_everything`` cover it, and the usual Keras cases
(docs/design.md, "The problem") explain themselves with the right field first.

Every TensorFlow process is a subprocess (tests/keras_job.py, examples/keras_*.py), so the test
runner never imports TensorFlow and the other tests capture the process they always did. They
are independent (each has a store of its own), so they run side by side (support/lanes.py).
Without TensorFlow these tests fail under CI (``make setup`` installs it: Makefile ``TF``) and are
skipped elsewhere, saying what to install.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mlflow_fingerprint import layout
from support.diff_text import assert_setting_ranked_first, verdict
from support.fixtures import in_ci
from support.lanes import Job, Lanes
from support.paths import JOBS, ROOT
from support.records import edit, log_run, new_store
from support.tracking import _ISOLATE

# The first test to ask for a result waits while the module's processes run, side by side.
pytestmark = pytest.mark.timeout(1200)
JOB = JOBS / "keras_job.py"
TIMEOUT_S = 300


MODES = ("no-tensorflow", "audit-seed", "callback", "autolog", "fingerprinted")
# script -> (the field the diff must rank first, the verdicts it may reach)
SCENARIOS = {
    "keras_seed.py": ("tensorflow.global_seed", {"explained"}),
    # the hash seed reorders string sets this script never iterates: the numbers agree
    "keras_pythonhashseed.py": ("seeds.pythonhashseed", {"same_results"}),
    # on the CPU most ops are deterministic either way
    "keras_op_determinism.py": ("tensorflow.op_determinism", {"same_results", "explained"}),
}


@dataclass(frozen=True)
class Place:
    """Where one process of this module keeps its runs: its folder and its store."""

    folder: Path
    uri: str


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory, mlflow_db_template: Path) -> dict[str, Place]:
    found = {}
    for name in (*SCENARIOS, *MODES):
        folder = tmp_path_factory.mktemp(name.removesuffix(".py"))
        found[name] = Place(folder, new_store(folder, mlflow_db_template))
    return found


@pytest.fixture(scope="module")
def processes(places: dict[str, Place]) -> Iterator[Lanes]:
    """Every TensorFlow process of this module (the scenarios, the slowest, first), each with
    its own store and spool, and this checkout's source first on its path."""
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    jobs = {}
    for name, place in places.items():
        env = {k: v for k, v in os.environ.items() if k not in _ISOLATE}
        env |= {
            "PYTHONPATH": path,
            "MLFLOW_TRACKING_URI": place.uri,
            "MLFLOW_FINGERPRINT_SPOOL": str(place.folder / "spool"),
        }
        script = ROOT / "examples" / name if name in SCENARIOS else JOB
        cmd = [sys.executable, str(script), *([] if name in SCENARIOS else [name])]
        jobs[name] = Job(cmd, cwd=place.folder, env=env, timeout_s=TIMEOUT_S)
    lanes = Lanes(jobs)
    yield lanes
    lanes.close()


def job(processes: Lanes, mode: str) -> dict[str, Any]:
    out = processes.result(mode)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(autouse=True)
def tensorflow_installed() -> None:
    if importlib.util.find_spec("tensorflow") is None:
        message = (
            "TensorFlow is not installed: `make setup` installs the CPU wheel (Makefile TF), "
            'or pip install "tensorflow-cpu==2.21.0"'
        )
        if in_ci():
            pytest.fail(f"the TensorFlow tests cannot run in CI: {message}", pytrace=False)
        pytest.skip(message)


def test_capture_and_seeding_never_import_tensorflow(processes: Lanes) -> None:
    """TensorFlow is installed, yet a process that never imported it still has not after a
    capture and a seed_everything; its sections say so."""
    result = job(processes, "no-tensorflow")
    assert result["loaded"] == []
    assert result["tensorflow"] == {"imported": False}
    assert result["keras"] == {"imported": False}


def test_seed_everything_seeds_an_imported_tensorflow(processes: Lanes) -> None:
    result = job(processes, "audit-seed")["seed"]
    assert (result["tf_seed"], result["keras_seed"], result["same_draw"]) == (7, 7, True)


def test_audit_covers_a_tensorflow_process(processes: Lanes) -> None:
    result = job(processes, "audit-seed")["audit"]
    assert {"tensorflow_seed", "tensorflow_op_determinism"} <= set(result["before"])
    assert not {"tensorflow_seed", "tensorflow_op_determinism", "seeds"} & set(result["after"])
    assert "tf_op_determinism: TensorFlow op determinism is on" in result["passed"]


def _run(uri: str, run_id: str) -> Any:
    import mlflow

    return mlflow.MlflowClient(uri).get_run(run_id)


def _fingerprint(uri: str, run_id: str, tmp: Path) -> dict[str, Any]:
    import mlflow

    path = mlflow.MlflowClient(uri).download_artifacts(run_id, layout.FINGERPRINT_ARTIFACT, tmp)
    return json.loads(Path(path).read_text())


def _history(uri: str, run_id: str, key: str) -> list[tuple[int, float]]:
    import mlflow

    return [(m.step, m.value) for m in mlflow.MlflowClient(uri).get_metric_history(run_id, key)]


def test_callback_records_the_fit_in_a_run_of_its_own(
    processes: Lanes, places: dict[str, Place], tmp_path: Path
) -> None:
    uri = places["callback"].uri
    result = job(processes, "callback")
    run = _run(uri, result["run_id"])
    assert run.info.status == "FINISHED"
    # the closing line a decorated run prints, with a command that works now (a first run: show)
    closing = f"mlflow-fingerprint: run {result['run_id']} "
    err = processes.result("callback").stderr.splitlines()
    (at,) = [i for i, x in enumerate(err) if x.startswith(closing)]
    assert f"  fingerprint show {result['run_id']}" in err[at : at + 3]
    assert not result["active_after"]  # the run it opened, it ended
    assert result["torch_loaded"] is False  # the callback's captures never imported torch
    tags, params = run.data.tags, run.data.params
    assert tags[layout.TAG_INTEGRATION] == "keras"
    assert tags[layout.TAG_TENSORFLOW] == "2.21.0"
    assert tags[layout.TAG_TF_OP_DETERMINISM] == "off"
    assert tags[layout.TAG_SEED] == "3 (TensorFlow global seed)"
    assert tags[layout.TAG_BATCH_SIZE] == str(result["batch_size"])
    assert params[layout.PARAM_BATCH_SIZE] == str(result["batch_size"])
    assert params[layout.PARAM_EPOCHS] == str(result["epochs"])
    record = _fingerprint(uri, result["run_id"], tmp_path)
    assert tags[layout.TAG_HASH] == record["hashes"]["fingerprint"]
    assert record["tensorflow"]["global_seed"] == 3
    assert record["keras"]["global_seed"] == 3  # Keras keeps it per thread: read on the fit's
    assert record["keras"]["backend"] == "tensorflow"
    assert record["data"]["declared"] == {"batch_size": 100, "epochs": 2}
    # what the first batch started from: the Dense layers' kernels and biases, whole (small)
    first = record["first_step"]
    assert first["recorded_by"] == "keras"
    weights = first["weights"]
    assert (weights["tensors"], weights["elements"], weights["tensors_sampled"]) == (
        4,
        64 * 32 + 32 + 32 * 10 + 10,
        0,
    )
    assert len(weights["digest"]) == 16
    assert weights["groups"][0]["digest"] == weights["digest"]
    assert first["batch"] == {
        "unavailable": "fit shuffles its arrays: Keras hands callbacks no batch"
    }
    # every batch once (steps 1..n), every epoch once (steps 0..epochs-1)
    batches = result["batches"] * result["epochs"]
    assert [s for s, _ in _history(uri, result["run_id"], "batch_loss")] == list(
        range(1, batches + 1)
    )
    assert [s for s, _ in _history(uri, result["run_id"], "loss")] == [0, 1]


def test_callback_records_into_the_run_mlflow_keras_autolog_opens(
    processes: Lanes, places: dict[str, Place], tmp_path: Path
) -> None:
    uri = places["autolog"].uri
    result = job(processes, "autolog")
    assert result["mlflow_logs_metrics"] is True
    run = _run(uri, result["run_id"])
    assert run.data.tags[layout.TAG_INTEGRATION] == "keras"
    assert run.data.tags[layout.TAG_TENSORFLOW] == "2.21.0"
    assert run.data.params[layout.PARAM_EPOCHS] == "2"  # autolog's and ours agree
    # autolog logs the epoch metrics; the callback adds none, so each is there once
    assert [s for s, _ in _history(uri, result["run_id"], "loss")] == [0, 1]
    assert _history(uri, result["run_id"], "batch_loss") == []
    record = _fingerprint(uri, result["run_id"], tmp_path)
    assert record["tensorflow"]["imported"] is True


def test_fingerprinted_function_that_calls_fit(
    processes: Lanes, places: dict[str, Place], tmp_path: Path
) -> None:
    """The decorated function's run holds a fingerprint with TensorFlow in it (captured when the
    function returned) and the fit's metrics, which the callback inside sent to that run."""
    uri = places["fingerprinted"].uri
    result = job(processes, "fingerprinted")
    run = _run(uri, result["run_id"])
    assert run.info.status == "FINISHED"
    assert layout.TAG_INTEGRATION not in run.data.tags  # the wrapper's run, not the callback's
    record = _fingerprint(uri, result["run_id"], tmp_path)
    assert record["tensorflow"]["imported"] is True
    assert record["tensorflow"]["global_seed"] == 5  # seed_everything reached TensorFlow
    assert record["keras"]["global_seed"] == 5  # and Keras, on the training thread
    assert record["seeds"]["requested"] == 5
    assert run.data.tags[layout.TAG_TENSORFLOW] == "2.21.0"
    # A Keras program that never imported torch: neither the captures nor the seeding did
    # (seconds and hundreds of MB in the training's process); the record says why.
    assert result["torch_loaded"] is False
    assert record["torch"] == {
        "unavailable": "not read: the program imported tensorflow, not torch"
    }
    assert record["seeds"]["torch_imported_by_program"] is None
    batches = result["batches"] * result["epochs"]
    assert len(_history(uri, result["run_id"], "batch_loss")) == batches


@pytest.mark.parametrize("script", sorted(SCENARIOS))
def test_keras_scenario_names_its_setting_first(script: str, processes: Lanes) -> None:
    out = processes.result(script)
    assert out.returncode == 0, out.stderr[-3000:]
    field, verdicts = SCENARIOS[script]
    assert_setting_ranked_first(out.stdout, field)
    assert verdict(out.stdout) in verdicts, out.stdout


def test_an_op_determinism_pair_of_one_seed_is_judged_against_reruns_at_that_seed(
    processes: Lanes, places: dict[str, Place], tmp_path: Path, mlflow_db_template: Path
) -> None:
    """Seed 1 with op determinism on against off, on a CPU: the curves part at step 1 by 7e-8
    while two seed-1 runs without it are bitwise equal. That is outside the noise at seed 1,
    so op determinism explains it; a seed-2 run of the same recipe (seed-to-seed spread) is no
    yardstick for it. The records are the callback run's real Keras record, set to each seed
    and switch; its real batch_loss curve is the seed-1 run's."""
    from mlflow_fingerprint import diff
    from mlflow_fingerprint.present import render

    uri, run_id = places["callback"].uri, job(processes, "callback")["run_id"]
    real = _fingerprint(uri, run_id, tmp_path)
    curve = [v for _, v in _history(uri, run_id, "batch_loss")]
    store = new_store(tmp_path, mlflow_db_template)

    def run(name: str, seed: int, on: bool, values: list[float]) -> str:
        record = edit(
            real,
            **{"tensorflow.global_seed": seed, "keras.global_seed": seed},
            **{"tensorflow.op_determinism": on},
        )
        tag = f"{seed} (TensorFlow global seed)"  # the seed tag a Keras run carries
        return log_run(store, "keras-op", name, record, {"batch_loss": values}, seed=tag)

    off = run("off", 1, False, curve)
    run("off again", 1, False, curve)  # a CPU rerun at seed 1: bit for bit
    run("off seed 2", 2, False, [v + 0.05 for v in curve])
    on = run("on", 1, True, [curve[0] + 7e-8, *curve[1:]])
    report = diff(on, off, tracking_uri=store)
    assert report.verdict == "explained", render(report, "text")
    assert report.effective_differences[0].field == "tensorflow.op_determinism"
    (loss,) = report.metrics
    spread = loss.spread
    assert spread is not None
    assert (spread.kind, spread.seed, spread.runs) == ("same_seed", 1, 2)
    assert (spread.band, spread.parts_at, spread.outside) == (0.0, None, True)
    said = "outside run-to-run noise at seed 1 (band 0 from 2 replicate runs seeded with 1"
    for form in ("text", "markdown", "html"):
        assert said in " ".join(render(report, form).split()), form
    (metric,) = report.to_dict()["metrics"]
    assert (metric["replicates"]["kind"], metric["replicates"]["seed"]) == ("same_seed", 1)
