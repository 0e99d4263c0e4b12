"""``fingerprint rerun`` and ``fingerprint bisect`` on real trainings (issue 15).

A small project (``tests/jobs/bisect_project``) is committed into a temporary git repository in
three commits: the project, a comment-only edit of ``helpers.py``, and a change of the model's
forward in ``model.py``. Pairs of runs are recorded from it, each differing in several things of
which exactly one moves the numbers; the others are the comment-only edit, the thread count
(``OMP_NUM_THREADS``, which does not change this tiny network's results) and the run name. The
bisect must name the one and rule out the rest, by reruns that stop a few steps after the curves
part.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlflow_fingerprint import layout
from support.gitrepo import git
from support.paths import JOBS, ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

PROJECT = JOBS / "bisect_project"
H100 = ROOT / "tests" / "fixtures" / "gpus" / "h100.json"

# name -> (commit, arguments, extra environment)
RUNS: dict[str, tuple[str, list[str], dict[str, str]]] = {
    "a": ("first", ["--seed", "0"], {}),
    "seed": ("comment", ["--seed", "1"], {"OMP_NUM_THREADS": "1"}),
    "lr": ("comment", ["--seed", "0", "--lr", "0.2"], {"OMP_NUM_THREADS": "1"}),
    "code": ("model", ["--seed", "0"], {"OMP_NUM_THREADS": "1"}),
    "w0": ("first", ["--seed", "0", "--augment"], {}),
    "w2": ("comment", ["--seed", "0", "--augment", "--workers", "2"], {"OMP_NUM_THREADS": "1"}),
    "pad": ("first", ["--seed", "0", "--pad"], {}),
    "det": ("comment", ["--seed", "0", "--pad", "--deterministic"], {"OMP_NUM_THREADS": "1"}),
    "free1": ("first", ["--augment", "--workers", "2"], {}),
    "free2": ("first", ["--augment", "--workers", "2"], {}),
    "h100": ("first", ["--seed", "0"], {"MLFLOW_FINGERPRINT_NVML_REPLAY": str(H100)}),
}

# What a CUDA build of torch that computed on the GPU records: with the GPU section read from an
# H100's NVML (replayed), the "h100" run's record becomes one made on that GPU.
ON_GPU = {
    "torch_built_with": "12.8",
    "cudnn_version": 91002,
    "nccl_version": "2.27.3",
    "toolkit": {"version": "12.8", "source": "torch"},
    "computed_on": "cuda",
}


def environment(uri: str, tmp: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MLFLOW_FINGERPRINT_") and k not in ("OMP_NUM_THREADS",)
    }
    env.update(
        {
            "PYTHONPATH": str(ROOT / "src"),
            "MLFLOW_TRACKING_URI": uri,
            "MLFLOW_FINGERPRINT_QUIET": "1",
            "MLFLOW_FINGERPRINT_SPOOL": str(tmp / "spool"),
            "TMPDIR": str(tmp / "tmp"),
        }
    )
    env.update(extra or {})
    return env


class Project:
    """The repository, its store, and the runs recorded from it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.repo = base / "project"
        self.uri = f"sqlite:///{base / 'mlflow.db'}"
        (base / "tmp").mkdir()
        self.commits: dict[str, str] = {}
        self.ids: dict[str, str] = {}

    def commit(self, name: str, message: str) -> None:
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", message)
        self.commits[name] = git(self.repo, "rev-parse", "HEAD").strip()

    def record(self, name: str, checkout: bool = True) -> str:
        commit, args, extra = RUNS.get(name, ("first", ["--seed", "0"], {}))
        if checkout:
            git(self.repo, "checkout", "-q", self.commits[commit])
        out = subprocess.run(
            [sys.executable, "train.py", *args, "--run-name", name],
            cwd=self.repo,
            env=environment(self.uri, self.base, extra),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
        return self.run_id(name)

    def record_interactive(self) -> str:
        """A run started with ``python -c``: no script to run again."""
        git(self.repo, "checkout", "-q", self.commits["first"])
        code = (
            "import sys; sys.argv = ['-c', '--run-name', 'interactive']; import train; train.main()"
        )
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=self.repo,
            env=environment(self.uri, self.base),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        return self.run_id("interactive")

    def record_dirty(self) -> str:
        """A run made with an uncommitted edit of ``model.py``, whose stored diff is then damaged
        (its context no longer matches the commit, as a diff whose context held a masked secret
        does)."""
        import mlflow

        git(self.repo, "checkout", "-q", self.commits["first"])
        model = self.repo / "model.py"
        model.write_text(model.read_text().replace("0.1 * torch.randn", "0.11 * torch.randn"))
        try:
            run_id = self.record("dirty", checkout=False)
        finally:
            git(self.repo, "checkout", "--", "model.py")
        client = mlflow.MlflowClient(self.uri)
        folder = Path(client.download_artifacts(run_id, layout.ARTIFACT_DIR, str(self.base)))
        diff = folder / layout.GIT_DIFF_FILE
        text = diff.read_text()
        assert "0.11 * torch.randn" in text
        damaged = text.replace("for p in self.parameters():", "for p in self.parameters():  # ***")
        assert damaged != text
        diff.write_text(damaged)
        client.log_artifact(run_id, str(diff), layout.ARTIFACT_DIR)
        return run_id

    def on_gpu(self, name: str) -> None:
        """Make run ``name``'s stored record one of a training on the (replayed) GPU."""
        import mlflow

        client = mlflow.MlflowClient(self.uri)
        run_id = self.ids[name]
        folder = Path(client.download_artifacts(run_id, layout.ARTIFACT_DIR, str(self.base)))
        path = folder / layout.FINGERPRINT_FILE
        record = json.loads(path.read_text())
        assert record["gpu"]["devices"][0]["name"].startswith("NVIDIA H100")
        record["cuda"] = ON_GPU
        path.write_text(json.dumps(record))
        client.log_artifact(run_id, str(path), layout.ARTIFACT_DIR)

    def run_id(self, name: str) -> str:
        import mlflow

        client = mlflow.MlflowClient(self.uri)
        (experiment,) = [e for e in client.search_experiments() if e.name == "bisect"]
        runs = client.search_runs(
            [experiment.experiment_id], f"tags.`mlflow.runName` = '{name}'", max_results=1
        )
        return runs[0].info.run_id

    def cli(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mlflow_fingerprint.cli", *args],
            cwd=cwd or self.repo,
            env=environment(self.uri, self.base),
            capture_output=True,
            text=True,
            timeout=900,
        )

    def bisect(self, a: str, b: str, *extra: str) -> tuple[int, dict]:
        git(self.repo, "checkout", "-q", "main")
        out = self.cli("bisect", self.ids[a], self.ids[b], "--format", "json", *extra)
        assert out.returncode in (0, 1), out.stderr[-3000:]
        return out.returncode, json.loads(out.stdout)

    def leftovers(self) -> list[str]:
        worktrees = git(self.repo, "worktree", "list", "--porcelain").count("worktree ")
        ours = [n for n in os.listdir(self.base / "tmp") if n.startswith("mfp-rerun")]
        return [f"{worktrees - 1} worktrees"] * (worktrees > 1) + ours


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    p = Project(tmp_path_factory.mktemp("bisect"))
    shutil.copytree(PROJECT, p.repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(p.repo, "init", "-q", "-b", "main")
    (p.repo / ".gitignore").write_text("__pycache__/\n")
    p.commit("first", "the project")
    helpers = p.repo / "helpers.py"
    helpers.write_text(helpers.read_text().replace('"""The loss."""', '"""The loss (mean)."""'))
    p.commit("comment", "a comment")
    model = p.repo / "model.py"
    text = model.read_text()
    changed = text.replace("torch.relu(self.fc1(", "torch.tanh(self.fc1(")
    assert changed != text
    model.write_text(changed)
    p.commit("model", "tanh instead of relu")
    for name in RUNS:
        p.ids[name] = p.record(name)
    p.on_gpu("h100")
    p.ids["interactive"] = p.record_interactive()
    p.ids["dirty"] = p.record_dirty()
    git(p.repo, "checkout", "-q", "main")
    return p


def cause_fields(report: dict) -> list[str]:
    return [c["field"] for c in report["causes"]]


def check_stops(report: dict) -> None:
    """Every rerun stopped within the margin after the step where A and B part."""
    until = report["until_step"]
    for rerun in report["reruns"]:
        assert rerun["stopped_at"] is not None, rerun
        assert until < rerun["stopped_at"] <= until + 1, rerun


@pytest.mark.parametrize(
    ("b", "cause", "sets"),
    [
        ("seed", "program.options.seed", "seeds.requested"),
        ("lr", "program.options.lr", None),
        ("code", "program.sources.files.model.py", None),
        ("w2", "program.options.workers", "data.loaders.0.num_workers"),
    ],
)
def test_bisect_names_the_one_difference_that_moves_the_numbers(
    project: Project, b: str, cause: str, sets: str | None
) -> None:
    a = "w0" if b == "w2" else "a"
    code, report = project.bisect(a, b)
    assert code == 0, report
    assert report["verdict"] == "proven"
    assert cause_fields(report) == [cause]
    if sets is not None:
        assert sets in report["causes"][0]["sets"]
    ruled = set(report["ruled_out"])
    if b != "code":
        assert "program.sources.files.helpers.py" in ruled  # the comment-only edit
    assert "torch.threads.intra_op" in ruled  # the thread count
    assert "program.options.run-name" in ruled  # a name, which changes nothing
    assert report["cannot_set"] == []
    check_stops(report)
    assert project.leftovers() == []


def test_bisect_of_one_cause_costs_at_most_log2_k_plus_2_reruns(project: Project) -> None:
    import math

    code, report = project.bisect("a", "lr")
    assert code == 0
    settable = [f for f in report["ruled_out"] if f != "program.options.run-name"]
    k = len(settable) + len(report["causes"])
    assert k >= 3
    assert len(report["reruns"]) <= math.ceil(math.log2(k)) + 2


def test_deterministic_mode_is_proven(project: Project) -> None:
    """``--pad`` reads a ``torch.empty`` buffer times 0: deterministic mode fills it with NaN."""
    code, report = project.bisect("pad", "det")
    assert code == 0, report
    assert cause_fields(report) == ["program.options.deterministic"]
    assert "determinism.deterministic_algorithms" in report["causes"][0]["sets"]
    assert "torch.threads.intra_op" in report["ruled_out"]
    assert "program.sources.files.helpers.py" in report["ruled_out"]
    check_stops(report)


def test_unseeded_workers_are_nondeterministic_and_the_switch_is_named(project: Project) -> None:
    code, report = project.bisect("free1", "free2")
    assert code == 0, report
    assert report["verdict"] == "nondeterministic"
    assert cause_fields(report) == ["data.loaders"]
    baseline, *switched = report["reruns"]
    assert baseline["matches"] != "a"
    assert baseline["overrides"] == {}
    assert len(switched) == 2
    assert all(r["overrides"] == {"data.loaders": 0} for r in switched)


def test_a_run_recorded_on_another_gpu_claims_no_cause(project: Project) -> None:
    code, report = project.bisect("h100", "seed")
    assert code == 1
    assert report["verdict"] == "not_settable"
    assert report["causes"] == []
    assert any(f.startswith("gpu.") for f in report["cannot_set"])
    assert report["reruns"] == []


def test_rerun_reproduces_a_run_and_tags_the_new_one(project: Project) -> None:
    import mlflow

    git(project.repo, "checkout", "-q", "main")  # not the run's commit: a worktree is made
    out = project.cli("rerun", project.ids["a"], "--until-step", "2", "--format", "json")
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert result["reproduced"] is True
    assert result["stopped_at"] == 3
    tags = mlflow.MlflowClient(project.uri).get_run(result["run_id"]).data.tags
    assert tags[layout.TAG_RERUN_OF] == project.ids["a"]
    assert tags[layout.TAG_STOPPED_AT] == "3"
    assert project.leftovers() == []


def test_rerun_with_set_values_does_not_reproduce_and_says_what_it_set(project: Project) -> None:
    import mlflow

    out = project.cli(
        "rerun",
        project.ids["a"],
        *("--set", "seeds.requested=5", "--set", "program.options.lr=0.3"),
        *("--until-step", "1", "--format", "json"),
    )
    assert out.returncode == 1, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert result["reproduced"] is False
    assert result["overrides"] == {"seeds.requested": 5, "program.options.lr": "0.3"}
    tags = mlflow.MlflowClient(project.uri).get_run(result["run_id"]).data.tags
    assert json.loads(tags[layout.TAG_OVERRIDES]) == {
        "seeds.requested": 5,
        "program.options.lr": "0.3",
    }


def test_a_whole_rerun_prints_its_diff_against_the_run(project: Project) -> None:
    out = project.cli("rerun", project.ids["a"])
    assert out.returncode == 0, out.stderr[-3000:]
    assert "reproduced: every metric equal, bit for bit, over the whole run" in out.stdout
    assert "verdict: same_results" in out.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["rerun", "RUN_interactive"], "started interactively"),
        (["rerun", "RUN_dirty"], "no longer applies"),
        (["bisect", "0" * 32, "1" * 32], "no run with id"),
        (["rerun", "a" * 31], "not a fingerprint file"),
        (["rerun", "RUN_a", "--set", "seeds.requested=many"], "seeds.requested"),
        (
            ["rerun", "RUN_a", "--set", "program.options.steps=oops", "--until-step", "1"],
            "the training failed in the rerun",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(project: Project, args: list[str], message: str) -> None:
    args = [project.ids[a[4:]] if a.startswith("RUN_") else a for a in args]
    out = project.cli(*args)
    assert out.returncode == 2, out.stdout + out.stderr
    errors = [line for line in out.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1, out.stderr
    assert message in errors[0], out.stderr
    assert "Traceback" not in out.stderr
    assert project.leftovers() == []


def test_diff_names_the_bisect_that_settles_it(project: Project) -> None:
    out = project.cli("diff", project.ids["a"], project.ids["lr"])
    assert out.returncode == 1, out.stderr
    assert f"fingerprint bisect {project.ids['a']} {project.ids['lr']}" in out.stdout
    same = project.cli("diff", project.ids["a"], project.ids["a"])
    assert "fingerprint bisect" not in same.stdout
