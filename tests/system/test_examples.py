"""Each scenario script of examples/ trains its pair for real and its diff names what it changed."""

from __future__ import annotations

import itertools
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlflow_fingerprint import layout
from support.diff_text import RANKED, assert_setting_ranked_first, verdict
from support.gitrepo import git
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
    show MLflow creating it), in a committed git repository: the store, its artifacts and the
    spool lie inside the project, as MLflow's defaults put them beside a user's code."""
    jobs: dict[str, Job] = {}
    demo = tmp_path_factory.mktemp("demo")
    git(demo, "init", "-q", "-b", "main")
    git(demo, "commit", "-q", "--allow-empty", "-m", "the project")
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
    r"^  then http://127\.0\.0\.1:5000/#/experiments/(\d+)\?workflowType=machine_learning$", re.M
)


def test_demo_piped_is_clean_and_leaves_the_report_in_run_b(examples: Lanes) -> None:
    """``make demo | tee log``: no MLflow INFO lines, no carriage returns, one line per run,
    the A-vs-B report stored in run B, the experiment's name with the ``explain`` command, and
    the address of its page in the UI."""
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
    (experiment_id,) = DEMO_URL.search(text).groups()
    assert "The runs are in MLflow experiment fingerprint-demo." in text
    assert re.search(r"^  \S*fingerprint explain fingerprint-demo$", text, re.M), text
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    (run,) = client.search_runs([experiment_id], "attributes.run_name = 'B'")
    run_id = run.info.run_id
    kind = client.get_experiment(experiment_id).tags[layout.MLFLOW_EXPERIMENT_KIND]
    assert kind == layout.EXPERIMENT_KIND_TRAINING
    (report,) = client.list_artifacts(run_id, layout.REPORT_DIR)
    assert report.path.endswith(f"_vs_{run_id[:12]}.html")
    assert "mlflow ui --backend-store-uri sqlite:///mlflow.db\n" in text  # port 5000: its default


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
    assert steps.endswith("no spread to explain.\n"), steps
    assert steps.count("\n") == 1, steps


def test_the_demos_one_change_is_one_numbered_row_on_one_screen(examples: Lanes) -> None:
    """B differs from A in one setting, ``--num-workers 2``, as the README says: one numbered
    change with the loader's worker count folded under it, and a report of at most 25 lines of
    100 columns."""
    out = examples.result("demo.py")
    assert out.returncode == 0, out.stdout[-3000:]
    reports = re.split(r"^\$ fingerprint diff .*$", out.stdout, flags=re.M)
    a_vs_b = reports[2].split("\nDone in ")[0].strip("\n")
    lines = a_vs_b.splitlines()
    assert len(lines) <= 25, a_vs_b
    assert max(map(len, lines)) <= 100, a_vs_b
    assert RANKED.findall(a_vs_b) == ["program.options.num-workers"], a_vs_b
    assert "↳ data.loaders.0.num_workers: 0 -> 2" in a_vs_b


def test_the_demos_records_list_none_of_the_stores_files(examples: Lanes) -> None:
    """MLflow's default store inside the repository (``mlflow.db``, ``mlruns/``) and the spool
    change with every run: no record lists them as the project's files."""
    from mlflow_fingerprint.compare.resolve import resolve

    out = examples.result("demo.py")
    assert out.returncode == 0, out.stdout[-3000:]
    folder = examples.jobs["demo.py"].cwd
    assert folder is not None
    store = {"mlflow.db", "mlruns", "spool"}
    assert store <= set(os.listdir(folder))  # they are there, untracked, beside the code
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    for name in ("A", "A-again", "B"):
        record = resolve(name, tracking_uri=uri, experiment="fingerprint-demo").record
        git_section = record["git"]
        assert git_section["root"] == str(folder)
        assert (git_section["untracked_files"], git_section["untracked_count"]) == ([], 0), name
        sources = record["program"]["sources"]["files"]
        assert not [p for p in sources if p.split("/")[0] in store], sources


# Every command a user runs on the demo's runs, with its default output (``capture`` and the
# environment's ``audit`` print what ``show B`` and ``audit B`` print, of this process: left out,
# a capture of the test process costs seconds).
DEMO_COMMANDS = (
    ("diff", "A", "B"),
    ("diff", "B"),
    ("show", "B"),
    ("audit", "B"),
    ("find", "A"),
    ("explain", "fingerprint-demo"),
)
SEPARATORS = "./_:=,-"


def split_words(narrow: str, wide: str) -> list[str]:
    """Where ``narrow`` broke a word of ``wide`` (the same output unwrapped) across two lines
    inside it, not after one of its own separators (a dot of a name, a slash of a path)."""
    words = set(wide.split())
    lines = [line.split() for line in narrow.splitlines()]
    found = []
    for upper, lower in itertools.pairwise(lines):
        if not upper or not lower or (upper[-1] in words and lower[0] in words):
            continue
        joined = upper[-1] + lower[0]
        if upper[-1][-1] not in SEPARATORS and any(joined in w for w in words):
            found.append(f"{upper[-1]} / {lower[0]}")
    return found


def test_every_command_fits_100_columns_on_the_demos_runs(
    examples: Lanes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """At ``COLUMNS=100`` no line of any command's default output is wider, and no word or
    number is split: each is compared with its output unwrapped (a very wide ``COLUMNS``).
    Run in this process (the commands' own code, without an interpreter's start each)."""
    from mlflow_fingerprint.cli.main import main

    out = examples.result("demo.py")
    assert out.returncode == 0, out.stdout[-3000:]
    folder = examples.jobs["demo.py"].cwd
    assert folder is not None
    monkeypatch.chdir(folder)  # the runs' repository: diff's bisect hint works here
    store = ["--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}", "-e", "fingerprint-demo"]
    demo_lines = out.stdout.splitlines()
    assert max(map(len, demo_lines)) <= 100, out.stdout
    for command in DEMO_COMMANDS:
        args = [*command, *(store if command[0] != "explain" else store[:2])]
        printed = {}
        for columns in ("100", "100000"):
            monkeypatch.setenv("COLUMNS", columns)
            code = main(args)
            captured = capsys.readouterr()
            assert code in (0, 1), (command, captured.err)
            printed[columns] = captured.out + captured.err
        lines = printed["100"].splitlines()
        assert lines, command
        too_wide = [line for line in lines if len(line) > 100]
        assert not too_wide, (command, too_wide)
        assert not split_words(printed["100"], printed["100000"]), (command, printed["100"])
    monkeypatch.setenv("COLUMNS", "100")
    main(["diff", "A", "B", *store])
    report = capsys.readouterr().out
    assert "fingerprint bisect " in report  # the hint works here: the runs' commit is in it
