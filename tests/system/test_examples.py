"""Each scenario script of examples/ trains its pair for real and its diff names what it changed."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlflow_fingerprint import layout
from support.diff_text import RANKED, assert_setting_ranked_first, verdict
from support.lanes import Job, Lanes
from support.paths import EXAMPLES
from support.records import new_store

# The first test to ask for a result waits while the module's processes run, side by side.
pytestmark = pytest.mark.timeout(1200)
# script -> (the field the diff must rank first, the verdict it must reach)
SCENARIOS = {
    "scenario_seed.py": ("seeds.requested", {"explained"}),
    "scenario_lr.py": ("program.options.lr", {"explained"}),
    "scenario_workers.py": ("data.loaders.0.num_workers", {"explained"}),
    "scenario_batch_size.py": ("data.loaders.0.batch_size", {"explained"}),
    "scenario_world_size.py": ("distributed.world_size", {"explained"}),
    # CPU kernels are deterministic either way, so the losses usually agree.
    "scenario_deterministic.py": (
        "determinism.deterministic_algorithms",
        {"same_results", "explained"},
    ),
}
SLOWEST_FIRST = ("scenario_world_size.py", "demo.py")


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory, mlflow_db_template: Path) -> Iterator[Lanes]:
    """Every example script, each in a folder of its own, run side by side (support/lanes.py).

    A scenario's store starts as a copy of the migrated template, so its first run does not
    create the database; the demo creates its own, as on a user's machine (its output must not
    show MLflow creating it)."""
    jobs: dict[str, Job] = {}
    demo = tmp_path_factory.mktemp("demo")
    jobs["demo.py"] = Job(
        [sys.executable, str(EXAMPLES / "demo.py")],
        cwd=demo,  # MLflow's default store: ./mlflow.db
        env={k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
        | {"MLFLOW_FINGERPRINT_SPOOL": str(demo / "spool")},
        merge_stderr=True,
    )
    for script in SCENARIOS:
        folder = tmp_path_factory.mktemp(script.removesuffix(".py"))
        env = {
            **os.environ,
            "MLFLOW_TRACKING_URI": new_store(folder, mlflow_db_template),
            "MLFLOW_FINGERPRINT_SPOOL": str(folder / "spool"),
        }
        jobs[script] = Job([sys.executable, str(EXAMPLES / script)], cwd=folder, env=env)
    tf32 = tmp_path_factory.mktemp("tf32")
    jobs["scenario_tf32.py"] = Job([sys.executable, str(EXAMPLES / "scenario_tf32.py")], cwd=tf32)
    order = [*SLOWEST_FIRST, *(name for name in jobs if name not in SLOWEST_FIRST)]
    lanes = Lanes({name: jobs[name] for name in order})
    yield lanes
    lanes.close()


@pytest.mark.parametrize("script", sorted(SCENARIOS))
def test_scenario_names_its_setting_first(script: str, examples: Lanes) -> None:
    out = examples.result(script)
    assert out.returncode == 0, out.stderr[-2000:]
    field, verdicts = SCENARIOS[script]
    assert_setting_ranked_first(out.stdout, field)
    assert verdict(out.stdout) in verdicts, out.stdout


def test_tf32_scenario_without_a_gpu_diffs_recorded_gpus(examples: Lanes) -> None:
    out = examples.result("scenario_tf32.py")
    assert out.returncode == 0, out.stderr[-2000:]
    a100, v100 = out.stdout.split("$ fingerprint diff v100")
    assert RANKED.search(a100).group(1) == "numerics.fp32_precision.cuda_matmul"
    assert "No differences that can change results." in v100


DEMO_URL = re.compile(
    r"^  http://127\.0\.0\.1:5000/#/experiments/(\d+)/runs/([0-9a-f]{32})"
    r"\?workflowType=machine_learning$",
    re.M,
)


def test_demo_piped_is_clean_and_leaves_the_report_in_run_b(examples: Lanes) -> None:
    """``make demo | tee log``: no MLflow INFO lines, no carriage returns, one line per run,
    the A-vs-B report stored in run B, and the address of run B's page in the UI."""
    out = examples.result("demo.py")
    folder = examples.jobs["demo.py"].cwd
    assert folder is not None
    assert out.returncode == 0, out.stdout[-3000:]
    text = out.stdout
    assert "\r" not in text
    for noise in (" INFO ", "alembic", "Creating initial MLflow database tables"):
        assert noise not in text, noise
    runs = re.findall(r"^  training (\S+): digits\.py .* \.\.\. done in \d+s$", text, re.M)
    assert runs == ["A", "A-again", "B"], text
    experiment_id, run_id = DEMO_URL.search(text).groups()
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    run = client.get_run(run_id)
    assert run.info.run_name == "B"
    assert run.info.experiment_id == experiment_id
    kind = client.get_experiment(experiment_id).tags[layout.MLFLOW_EXPERIMENT_KIND]
    assert kind == layout.EXPERIMENT_KIND_TRAINING
    (report,) = client.list_artifacts(run_id, layout.REPORT_DIR)
    assert report.path.endswith(f"_vs_{run_id[:12]}.html")
    assert f"report stored in run {run_id} as {report.path}" in text
    assert "--backend-store-uri sqlite:///mlflow.db --port 5000" in text


def test_explain_on_the_demos_experiment_picks_a_metric_that_varies(examples: Lanes) -> None:
    """Issue 44: the demo's runs each return ``steps`` (the same in every run) and
    ``val_error``; ``explain`` without ``--metric`` explains the one that varies, and ``steps``
    is one line saying the runs agree."""
    import mlflow_fingerprint as mfp
    from mlflow_fingerprint.present.explain import render

    assert examples.result("demo.py").returncode == 0
    folder = examples.jobs["demo.py"].cwd
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    report = mfp.explain("fingerprint-demo", tracking_uri=uri)
    assert report.metric == "val_error", report.notes
    assert report.sd > 0
    steps = render(mfp.explain("fingerprint-demo", tracking_uri=uri, metric="steps"), "text")
    assert steps.endswith("there is no spread to explain.\n"), steps
    assert steps.count("\n") == 1, steps


def test_the_demos_one_change_is_one_numbered_row_on_one_screen(examples: Lanes) -> None:
    """Issue 29: ``--num-workers 2 --no-seed-workers`` is one user change (workers, and their
    seeding switched off with them), and its report fits 25 lines of 100 columns."""
    out = examples.result("demo.py")
    assert out.returncode == 0, out.stdout[-3000:]
    reports = re.split(r"^\$ fingerprint diff .*$", out.stdout, flags=re.M)
    a_vs_b = reports[2].split("\nDone in ")[0].strip("\n")
    lines = a_vs_b.splitlines()
    assert len(lines) <= 25, a_vs_b
    assert max(map(len, lines)) <= 100, a_vs_b
    assert RANKED.findall(a_vs_b) == ["program.options.num-workers"], a_vs_b
    assert "↳ program.options.no-seed-workers: false -> true" in a_vs_b
