"""The bisect project the modules of this folder share (``conftest.py`` builds it once for
them all): a small project (``tests/jobs/bisect_project``) committed into a temporary git
repository in three commits: the project, a comment-only edit of ``helpers.py``, and a change of
the model's forward in ``model.py``. Its ``train()`` returns its final metrics, as the README
shows, so every run has a summary metric (``val_loss``) besides its curve (``loss``); the lr pair
is bisected again without it (copies of its runs as a ``train()`` that returns nothing logs
them). Pairs of runs are recorded from it, each differing in things of which exactly one moves
the numbers; the others are the comment-only edit and the thread count, which do not change this
tiny network's results.

Cost: every training is a process that imports torch and MLflow. The runs are recorded once, two
at a time, and every bisect and rerun whose result several tests read runs once, two at a time,
in ``run_jobs``; the tests only read results. Runs that differ only in their record (another
GPU, a crafted entry point) are copies of a recorded run with the record edited, not new
trainings.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mlflow_fingerprint import layout
from mlflow_fingerprint.prove.recipe import diff_digest
from support.gitrepo import git
from support.paths import FIXTURES, JOBS, ROOT

PROJECT = JOBS / "bisect_project"


H100 = FIXTURES / "gpus" / "h100.json"


PARALLEL = 2  # the CI machine's cores: two processes at a time


TOKEN = "ghp_" + "Zq7" * 12  # a token-shaped value handed to --set: it must be stored nowhere


ENV_TOKEN = "ghp_" + "Vx4" * 12  # a token in the training's environment: a digest, never set


# B's environment: the variable the program reads (LR_SCALE) among seven it does not read, a
# token, and a CI's own variable (volatile: no difference at all).
ENVP = {
    "LR_SCALE": "2",
    **{f"UNUSED_{i}": str(i) for i in range(7)},
    "SERVICE_TOKEN": ENV_TOKEN,
    "GITHUB_RUN_ID": "99",
}


# name -> (commit, arguments, extra environment). Every process runs with one torch thread (two
# at a time on two cores); the "seed" run has two, a difference that changes nothing here.
RUNS: dict[str, tuple[str, list[str], dict[str, str]]] = {
    "a": ("first", ["--seed", "0"], {}),
    "seed": ("comment", ["--seed", "1"], {"OMP_NUM_THREADS": "2"}),
    "lr": ("first", ["--seed", "0", "--lr", "0.2"], {}),
    "code": ("model", ["--seed", "0"], {}),
    "w0": ("first", ["--seed", "0", "--augment"], {}),
    "w2": ("first", ["--seed", "0", "--augment", "--workers", "2"], {}),
    "pad": ("first", ["--seed", "0", "--pad"], {}),
    "det": ("first", ["--seed", "0", "--pad", "--deterministic"], {}),
    "free1": ("first", ["--augment", "--workers", "2"], {}),
    "free2": ("first", ["--augment", "--workers", "2"], {}),
    "envp": ("first", ["--seed", "0"], ENVP),
}


# What a CUDA build of torch that computed on the GPU records: with the GPU section read from an
# H100's NVML (replayed), a copy of run "a" becomes one made on that GPU.
ON_GPU = {
    "torch_built_with": "12.8",
    "cudnn_version": 91002,
    "nccl_version": "2.27.3",
    "toolkit": {"version": "12.8", "source": "torch"},
    "computed_on": "cuda",
}


RUN_LINE = re.compile(r"mlflow-fingerprint: run ([0-9a-f]{32}) ")


def environment(base: Path, uri: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_FINGERPRINT_")}
    env.update(
        {
            "PYTHONPATH": str(ROOT / "src"),
            "MLFLOW_TRACKING_URI": uri,
            "MLFLOW_FINGERPRINT_SPOOL": str(base / "spool"),
            "TMPDIR": str(base / "tmp"),
            "OMP_NUM_THREADS": "1",
            # the runs made here to bisect need no description (tests/system/test_run_announce.py)
            "MLFLOW_FINGERPRINT_DESCRIBE": "0",
        }
    )
    env.update(extra or {})
    return env


def in_parallel(jobs: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Each job's result, ``PARALLEL`` at a time (the jobs start processes and wait)."""
    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: f.result() for name, f in futures.items()}


@dataclass(frozen=True)
class Done:
    """A command line that ran: exit status, output, wall time."""

    code: int
    out: str
    err: str
    wall_s: float

    def json(self) -> Any:
        assert self.code in (0, 1), self.err[-3000:]
        return json.loads(self.out)


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

    def record(self, name: str, tree: Path, script: str = "train.py") -> str:
        """Train run ``name`` in ``tree`` (a worktree at the run's commit); its run id."""
        _, args, extra = RUNS.get(name, ("first", [], {}))
        env = environment(self.base, self.uri, extra)
        env.pop("MLFLOW_FINGERPRINT_QUIET", None)  # the closing line names the run
        out = subprocess.run(
            [sys.executable, script, *args],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
        if script == "plain.py":
            return out.stdout.split("plain run ")[1].split()[0]
        found = RUN_LINE.search(out.stderr)
        assert found, out.stderr[-2000:]
        return found.group(1)

    def record_all(self) -> None:
        """Every run of RUNS, and one through a plain ``mlflow.start_run``, two at a time: each
        from a worktree of its commit, as the repository was then."""
        trees = {}
        for commit, sha in self.commits.items():
            trees[commit] = self.base / "trees" / commit
            git(self.repo, "worktree", "add", "--detach", "-q", str(trees[commit]), sha)
        jobs: dict[str, Callable[[], Any]] = {
            name: (lambda n=name, c=commit: self.record(n, trees[c]))
            for name, (commit, _, _) in RUNS.items()
        }
        jobs["plain"] = lambda: self.record("plain", trees["first"], "plain.py")
        self.ids.update(in_parallel(jobs))
        for tree in trees.values():
            git(self.repo, "worktree", "remove", "--force", str(tree))

    def client(self) -> Any:
        import mlflow

        return mlflow.MlflowClient(self.uri)

    def record_of(self, name: str) -> dict[str, Any]:
        folder = Path(tempfile.mkdtemp(dir=self.base / "tmp"))
        client = self.client()
        path = client.download_artifacts(self.ids[name], layout.FINGERPRINT_ARTIFACT, str(folder))
        record = json.loads(Path(path).read_text())
        shutil.rmtree(folder)
        return record

    def clone(
        self,
        name: str,
        source: str,
        edit: Callable[[dict[str, Any]], None],
        metrics_from: str | None = None,
        diff: str | None = None,
        leave_out: tuple[str, ...] = (),
    ) -> str:
        """A run whose record is ``source``'s edited, its metrics those of ``metrics_from`` (as
        logged, times included) but ``leave_out``, its start and end ``source``'s: a run that
        differs from a recorded one only in what the test changed."""
        from mlflow.entities import Metric

        client = self.client()
        src = client.get_run(self.ids[source])
        tags = {k: v for k, v in src.data.tags.items() if k.startswith(layout.TAG_PREFIX)}
        run = client.create_run(
            src.info.experiment_id, start_time=src.info.start_time, tags=tags, run_name=name
        )
        run_id = run.info.run_id
        donor = self.ids[metrics_from or source]
        for key in set(client.get_run(donor).data.metrics) - set(leave_out):
            history = client.get_metric_history(donor, key)
            client.log_batch(run_id, [Metric(m.key, m.value, m.timestamp, m.step) for m in history])
        for key, value in src.data.params.items():
            client.log_param(run_id, key, value)
        record = self.record_of(source)
        edit(record)
        folder = Path(tempfile.mkdtemp(dir=self.base / "tmp"))
        (folder / layout.FINGERPRINT_FILE).write_text(json.dumps(record))
        if diff is not None:
            (folder / layout.GIT_DIFF_FILE).write_text(diff)
        client.log_artifacts(run_id, str(folder), layout.ARTIFACT_DIR)
        shutil.rmtree(folder)
        client.set_terminated(run_id, "FINISHED", end_time=src.info.end_time)
        self.ids[name] = run_id
        return run_id

    def cli(self, *args: str, timeout: float = 600) -> Done:
        started = time.monotonic()
        out = subprocess.run(
            [sys.executable, "-m", "mlflow_fingerprint.cli", *args],
            cwd=self.repo,
            env=environment(self.base, self.uri),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Done(out.returncode, out.stdout, out.stderr, time.monotonic() - started)

    def leftovers(self) -> list[str]:
        """Worktrees and temporary folders a rerun left behind."""
        worktrees = git(self.repo, "worktree", "list", "--porcelain").count("worktree ")
        ours = [n for n in os.listdir(self.base / "tmp") if n.startswith("mfp-rerun")]
        return [f"{worktrees - 1} worktrees"] * (worktrees > 1) + ours

    def rerun_processes(self, run_id: str) -> list[int]:
        """Live processes started for a rerun of ``run_id`` (by the variable a rerun sets)."""
        marker = f"MLFLOW_FINGERPRINT_RERUN_OF={run_id}".encode()
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes()
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker in environ.split(b"\0") and state != "Z":
                found.append(int(pid))
        return found


def damaged_diff(p: Project) -> str:
    """A real uncommitted diff of ``model.py``, then damaged (its context no longer matches the
    commit, as a diff whose context held a masked secret does)."""
    model = p.repo / "model.py"
    original = model.read_text()
    model.write_text(original.replace("0.1 * torch.randn", "0.11 * torch.randn"))
    try:
        text = git(p.repo, "diff")
    finally:
        model.write_text(original)
    damaged = text.replace("for p in self.parameters():", "for p in self.parameters():  # ***")
    assert damaged != text
    return damaged


def gpu_section() -> dict[str, Any]:
    """The ``gpu`` section capture reads from an H100's NVML, replayed."""
    import mlflow_fingerprint as mfp

    saved = os.environ.get("MLFLOW_FINGERPRINT_NVML_REPLAY")
    os.environ["MLFLOW_FINGERPRINT_NVML_REPLAY"] = str(H100)
    try:
        section = mfp.capture().to_dict()["gpu"]
    finally:
        if saved is None:
            os.environ.pop("MLFLOW_FINGERPRINT_NVML_REPLAY")
        else:
            os.environ["MLFLOW_FINGERPRINT_NVML_REPLAY"] = saved
    assert section["devices"][0]["name"].startswith("NVIDIA H100")
    return section


def set_path(record: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = record
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


def edits(*pairs: tuple[str, Any]) -> Callable[[dict[str, Any]], None]:
    def edit(record: dict[str, Any]) -> None:
        for path, value in pairs:
            set_path(record, path, value)

    return edit


def make_clones(p: Project) -> None:
    """Runs that differ from recorded ones only in their record."""
    canary = p.base / "canary"
    (p.base / "canary.py").write_text(f"open({str(canary)!r}, 'w').write('ran')\n")
    hook = p.base / "hooks"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(f"open({str(canary)!r}, 'w').write('ran')\n")
    gpu = gpu_section()

    def on_gpu(record: dict[str, Any]) -> None:
        record["gpu"], record["cuda"] = gpu, ON_GPU

    p.clone("h100", "a", on_gpu)
    # The lr pair as a train() that returns nothing logs it: the same curves, no summary.
    p.clone("bare_a", "a", edits(), leave_out=("val_loss",))
    p.clone("bare_lr", "lr", edits(), leave_out=("val_loss",))
    p.clone("interactive", "a", edits(("program.entry.kind", "interactive")))
    damaged = damaged_diff(p)
    p.clone(
        "dirty",
        "a",
        edits(("git.dirty", True), ("git.diff_digest", "0123456789abcdef")),
        diff=damaged,
    )
    # The same damaged diff, its digest matching it: it passes the digest check, not git apply.
    p.clone(
        "stale",
        "a",
        edits(("git.dirty", True), ("git.diff_digest", diff_digest(damaged))),
        diff=damaged,
    )
    # B made with another torch: its curve is another's, its record differs only there.
    p.clone("torchver", "a", edits(("torch.version", "2.0.0+cpu")), metrics_from="lr")
    # B's record names variables that would run code in a rerun, had it applied them.
    p.clone(
        "seed_env",
        "seed",
        edits(
            ("torch.threads.env.PYTHONPATH", str(hook)),
            ("numerics.env.LD_PRELOAD", str(p.base / "preload.so")),
            ("determinism.env.PYTHONSTARTUP", str(p.base / "canary.py")),
        ),
    )
    # Records whose program leads outside the repository.
    p.clone("abs_entry", "a", edits(("program.entry.path", str(p.base / "canary.py"))))
    p.clone("up_entry", "a", edits(("program.entry.path", "../canary.py")))
    p.clone("argv0", "a", edits(("program.argv", [str(p.base / "canary.py"), "--seed", "0"])))
    p.clone("cwd_out", "a", edits(("program.cwd", "../..")))
    p.clone(
        "stdlib",
        "a",
        edits(("program.entry.kind", "module"), ("program.entry.module", "http.server")),
    )


def build_project(tmp_path_factory: pytest.TempPathFactory, mlflow_db_template: Path) -> Project:
    """The project, its runs recorded and their copies made: conftest's ``project``."""
    p = Project(tmp_path_factory.mktemp("bisect"))
    # The store and the experiment exist before two trainings start at once (MLflow's first-use
    # migrations race); the artifacts live beside the store, not in the repository.
    shutil.copyfile(mlflow_db_template, p.base / "mlflow.db")
    p.client().create_experiment("bisect", artifact_location=(p.base / "artifacts").as_uri())
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
    p.record_all()
    # The demo's pair (augmentation in the main process, then in two workers), named as the
    # demo names its runs: a rerun of A must not take the name A.
    for name, run_name in (("w0", "A"), ("w2", "B")):
        p.client().update_run(p.ids[name], name=run_name)
    make_clones(p)
    return p


def wait_until(check: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen in {timeout_s:g} s")


def reruns_of(project: Project, of: str) -> dict[str, Any]:
    """The runs reruns of ``of`` made so far, by id."""
    client = project.client()
    experiment = client.get_experiment_by_name("bisect").experiment_id
    found = client.search_runs([experiment], f"tags.`{layout.TAG_RERUN_OF}` = '{project.ids[of]}'")
    return {r.info.run_id: r for r in found}


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


# (A, B) of each bisect, by name; those run through the command line (the others through
# ``mfp.bisect``, the same code without an interpreter's start: what a test here pays for most).
PAIRS = {
    "seed": ("a", "seed_env"),
    "code": ("a", "code"),
    "free": ("free1", "free2"),
    "lr": ("a", "lr"),
    "w2": ("w0", "w2"),
    "det": ("pad", "det"),
    "bare": ("bare_a", "bare_lr"),
    "envp": ("a", "envp"),
    "torchver": ("a", "torchver"),
    "h100": ("h100", "seed"),
}


BY_CLI = ("torchver", "envp")


# How many reruns each bisect runs at once: one (the searches below count reruns), but the
# environment pair's 8 settable differences, searched 4 at a time.
JOBS = {"envp": 4}


def api_done(call: Callable[[], Any]) -> Done:
    """A Python API call as the command line would have ended: its exit code and its JSON."""
    started = time.monotonic()
    result = call()
    return Done(result.exit_code, json.dumps(result.to_dict()), "", time.monotonic() - started)


def refused(call: Callable[[], Any]) -> str:
    """The one line a call refuses with (``UsageError``)."""
    from mlflow_fingerprint.errors import UsageError

    with pytest.raises(UsageError) as caught:
        call()
    return str(caught.value)


@dataclass(frozen=True)
class Ended:
    """A ``fingerprint rerun`` ended from outside: how it exited, and what it left."""

    code: int
    err: str
    run_id: str | None
    training: list[int]  # the training's processes while it ran
    left: list[int]  # those still alive afterwards
    tree: Path | None  # the worktree it ran in


def endless(project: Project, of: str, *extra: str) -> subprocess.Popen[str]:
    """``fingerprint rerun`` of ``of`` with a training that would run for hours, mostly asleep."""
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "mlflow_fingerprint.cli", "rerun", project.ids[of]),
            *("--set", "program.options.steps=100000", "--set", "program.options.pause=0.5"),
            *extra,
        ],
        cwd=project.repo,
        env=environment(project.base, project.uri),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ended(project: Project, of: str, cli: subprocess.Popen[str], before: set[str]) -> Ended:
    """Wait for ``cli`` to end on its own (a time bound); what it left."""
    try:
        _, err = cli.communicate(timeout=300)
    finally:
        if cli.poll() is None:
            cli.kill()
    new = set(reruns_of(project, of)) - before
    tree = re.search(r"rerunning \w+ in\s+(\S+)", err)  # the line may wrap before the path
    left = project.rerun_processes(project.ids[of])
    return Ended(cli.returncode, err, min(new) if new else None, [], left, tree and Path(tree[1]))


def terminated(project: Project) -> Ended:
    """A rerun of "lr" sent SIGTERM once its training has opened its run."""
    before = set(reruns_of(project, "lr"))
    cli = endless(project, "lr")
    try:
        wait_until(lambda: set(reruns_of(project, "lr")) - before, 240, "the rerun's run")
        training = wait_until(lambda: project.rerun_processes(project.ids["lr"]), 60, "training")
        cli.send_signal(signal.SIGTERM)
    except BaseException:
        cli.kill()
        raise
    result = ended(project, "lr", cli, before)
    return Ended(result.code, result.err, result.run_id, training, result.left, result.tree)


def timed_out(project: Project) -> Ended:
    """A rerun of "w2" whose training runs past ``--timeout`` (in a worktree: the repository is
    at another commit)."""
    before = set(reruns_of(project, "w2"))
    return ended(project, "w2", endless(project, "w2", "--timeout", "30"), before)


def run_jobs(project: Project) -> dict[str, Any]:
    """Every bisect and rerun whose result tests read, run once: two at a time, and beside them
    the two reruns ended from outside (asleep most of the time)."""
    import mlflow_fingerprint as mfp

    ids = project.ids
    todo: dict[str, Callable[[], Any]] = {}
    for name, (a, b) in PAIRS.items():
        if name in BY_CLI:
            n = str(JOBS.get(name, 1))
            todo[f"bisect:{name}"] = lambda a=a, b=b, n=n: project.cli(
                "bisect", ids[a], ids[b], "--format", "json", "--jobs", n
            )
        else:
            todo[f"bisect:{name}"] = lambda a=a, b=b: api_done(
                lambda: mfp.bisect(
                    ids[a], ids[b], tracking_uri=project.uri, repo=project.repo, jobs=1
                )
            )
    todo["api:bisect:torchver"] = lambda: api_done(
        lambda: mfp.bisect(
            ids["a"], ids["torchver"], tracking_uri=project.uri, repo=project.repo, jobs=1
        )
    )
    todo["rerun:until"] = lambda: project.cli(
        "rerun", ids["a"], "--until-step", "2", "--format", "json"
    )
    todo["api:rerun:until"] = lambda: api_done(
        lambda: mfp.rerun(ids["a"], until_step=2, tracking_uri=project.uri, repo=project.repo)
    )
    todo["rerun:set"] = lambda: project.cli(
        "rerun",
        ids["a"],
        *("--set", "seeds.requested=5", "--set", "program.options.lr=0.3"),
        *("--set", f"program.options.api-key={TOKEN}"),
        *("--until-step", "1", "--format", "json"),
    )
    todo["rerun:plain"] = lambda: project.cli("rerun", ids["plain"])
    todo["rerun:oops"] = lambda: refused(
        lambda: mfp.rerun(
            ids["a"],
            set={"program.options.steps": "oops"},
            until_step=1,
            tracking_uri=project.uri,
            repo=project.repo,
        )
    )
    asleep = {
        "signal:term": lambda: terminated(project),
        "signal:timeout": lambda: timed_out(project),
    }
    with pytest.MonkeyPatch.context() as mp:  # what the API's reruns inherit, as the CLI's do
        for name, value in environment(project.base, project.uri).items():
            mp.setenv(name, value)
        mp.setattr(tempfile, "tempdir", str(project.base / "tmp"))
        with concurrent.futures.ThreadPoolExecutor(len(asleep)) as aside:
            waiting = {name: aside.submit(job) for name, job in asleep.items()}
            done = in_parallel(todo)
            done.update({name: f.result() for name, f in waiting.items()})
    return done


def cause_fields(report: dict) -> list[str]:
    return [c["field"] for c in report["causes"]]


def check_stops(report: dict) -> None:
    """Every rerun stopped within the margin after the step where A and B part."""
    until = report["until_step"]
    for rerun in report["reruns"]:
        assert rerun["stopped_at"] is not None, rerun
        assert until < rerun["stopped_at"] <= until + 1, rerun


def cli_here(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """The command line in this process (its startup is what costs, not its checks), with what
    it sets in the environment put back afterwards."""
    from mlflow_fingerprint.cli.main import main
    from mlflow_fingerprint.tracking import store

    for name in (*store.CLI_ENV_DEFAULTS, store.HTTP_TIMEOUT):
        was = os.environ.get(name)
        monkeypatch.setenv(name, was or "")  # remembered as it was, put back after the test
        if was is None:
            monkeypatch.delenv(name)
    monkeypatch.setattr(store, "_cli_mode", store._cli_mode)
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err
