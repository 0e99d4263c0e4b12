"""A corpus of over fifty secret shapes (tests/support/secrets_corpus.py), planted where real ones
are found: environment variables, a modified tracked file and a staged new file (so the
uncommitted diff), the command line, the exception message of a decorated training that fails,
its run name, the tags it hands to ``fingerprinted``, and params the training logs itself with
``mlflow.log_params``. Then the product reads the runs back as a user would: ``show``, ``diff``
in every format (one of them stored with ``--log-to``), ``find`` and ``audit``.

None of the secrets may appear in anything the product writes or prints: every tag, param,
metric name and artifact of every run (read back from a real sqlite store), the spool, the
processes' stdout and stderr, and every command's output. The one exception is the params the
training logged itself: the user's own MLflow data stays as they wrote it (checked too), and
reports show it masked.

Both ways a run is fingerprinted are covered: the decorator, and a plain ``mlflow.start_run()``
(the run context provider), which uploads the same diff. An offline run (the store unreachable)
keeps everything in its spool, which is searched too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.cli.main import main
from mlflow_fingerprint.tracking import tags as tagging
from support.gitrepo import git
from support.secrets_corpus import Planted, corpus
from support.stored import StoredRun, fetch_everything, find_planted

CORPUS = corpus()
SECRETS = {entry.name: entry.secret for entry in CORPUS}
ENV = {f"MFP_CORPUS_{i:02d}": entry.line for i, entry in enumerate(CORPUS)}

JOB = textwrap.dedent("""
    import os, sys, warnings
    import mlflow
    import mlflow_fingerprint as mfp

    lines = [os.environ[k] for k in sorted(os.environ) if k.startswith("MFP_CORPUS_")]
    warnings.simplefilter("default")

    if sys.argv[1] == "decorated":
        @mfp.fingerprinted(
            experiment="corpus",
            seed=0,
            start_timeout_s=float(sys.argv[2]),
            flush_timeout_s=20,
            run_name=" ".join(lines),
            tags={f"note_{i:02d}": line for i, line in enumerate(lines)},
        )
        def train():
            if mlflow.active_run() is not None:  # the user's own params, as they wrote them
                mlflow.log_params({f"corpus_{i:02d}": line for i, line in enumerate(lines)})
            for step in range(3):
                mfp.log_metrics({"loss": 1.0 / (step + 1)}, step=step)
            raise RuntimeError("training failed; its settings were:\\n" + "\\n".join(lines))

        try:
            train()
        except RuntimeError:
            print("training failed as planned")
    else:
        mlflow.set_experiment("corpus-plain")
        with mlflow.start_run(run_name="plain"):
            mlflow.log_param("lr", 0.1)
            mlflow.log_params({f"corpus_{i:02d}": "plain" for i in range(len(lines))})
        print("plain run done")
""")


def planted_repo(root: Path) -> Path:
    """A repository whose tracked ``config.py`` was edited and whose ``deploy.env`` was staged,
    each with every line of the corpus."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "config.py").write_text("lr = 0.1\n")
    (repo / "job.py").write_text(JOB)
    git(repo, "add", "config.py", "job.py")
    git(repo, "commit", "-q", "-m", "first")
    body = "\n".join(entry.line for entry in CORPUS)
    (repo / "config.py").write_text(f"lr = 0.2\n{body}\n")
    (repo / "deploy.env").write_text(body + "\n")
    git(repo, "add", "deploy.env")
    return repo


def run_job(repo: Path, uri: str, spool: Path, *args: str) -> subprocess.CompletedProcess[str]:
    src = str(Path(mfp.__file__).resolve().parents[1])  # this checkout's package, from any cwd
    env = {
        **os.environ,
        **ENV,
        "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
        "MLFLOW_TRACKING_URI": uri,
        "MLFLOW_FINGERPRINT_SPOOL": str(spool),
    }
    argv = [e.line for e in CORPUS]  # the command line carries every secret too
    return subprocess.run(
        [sys.executable, "job.py", *args, *argv],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def leaks(text: str, where: str) -> list[str]:
    return [f"{name} in {where}" for name, secret in SECRETS.items() if secret in text]


def spool_text(spool: Path) -> str:
    return "\n".join(
        p.read_bytes().decode("utf-8", errors="replace") for p in spool.rglob("*") if p.is_file()
    )


def test_the_corpus_is_large_and_planted(tmp_path: Path) -> None:
    assert len(CORPUS) >= 40
    assert len(set(SECRETS.values())) == len(CORPUS)
    diff = git(planted_repo(tmp_path), "diff", "HEAD")
    assert [name for name, secret in SECRETS.items() if secret not in diff] == []


def read_back(client: MlflowClient, tmp_path: Path, label: str) -> dict[str, StoredRun]:
    """Both runs as MLflow holds them now, every artifact downloaded."""
    runs = {}
    for name in ("corpus", "corpus-plain"):
        experiment = client.get_experiment_by_name(name)
        assert experiment is not None, name
        [run] = client.search_runs([experiment.experiment_id])
        runs[name] = fetch_everything(client, run.info.run_id, tmp_path / label / name)
    return runs


def product_hits(stored: StoredRun) -> list[str]:
    """Planted secrets in what the product wrote: everything but the params the training
    logged itself (``corpus_*``), which are the user's own data."""
    return [hit for hit in find_planted(stored, SECRETS) if not hit.endswith(tuple(USER_PARAMS))]


USER_PARAMS = [f"in param corpus_{i:02d}" for i in range(len(CORPUS))]


def commands(
    capsys: pytest.CaptureFixture[str], uri: str, decorated: str, plain: str
) -> dict[str, str]:
    """What a user reads about the runs: each command's stdout and stderr, by command line."""
    runs = ("--tracking-uri", uri)
    argvs = [
        ["show", decorated, *runs],
        ["show", decorated, *runs, "--format", "json"],
        ["show", plain, *runs],
        ["find", decorated, *runs],
        ["find", decorated, *runs, "--format", "json"],
        ["audit"],
        *(["diff", decorated, plain, *runs, "--all", "--format", f] for f in FORMATS),
        ["diff", decorated, plain, *runs, "--format", "markdown", "--log-to", plain],
    ]
    said = {}
    capsys.readouterr()
    for argv in argvs:
        code = main(argv)
        out, err = capsys.readouterr()
        assert code in (0, 1), (argv, err)
        said[" ".join(argv)] = out + err
    return said


FORMATS = ("text", "json", "markdown", "html")


def test_no_secret_of_the_corpus_is_stored_spooled_or_printed(
    sqlite_tracking_uri: str,
    tmp_path: Path,
    spool_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    restore_environ: None,
) -> None:
    repo = planted_repo(tmp_path)
    decorated = run_job(repo, sqlite_tracking_uri, spool_dir, "decorated", "120")
    assert "training failed as planned" in decorated.stdout, decorated.stderr
    plain = run_job(repo, sqlite_tracking_uri, spool_dir, "plain")
    assert "plain run done" in plain.stdout, plain.stderr

    client = MlflowClient(sqlite_tracking_uri)
    runs = read_back(client, tmp_path, "before")
    failed = runs["corpus"]
    assert failed.info["status"] == "FAILED"
    assert "loss" in failed.metric_keys
    traceback = failed.artifacts[layout.TRACEBACK_ARTIFACT].decode()
    assert "RuntimeError: training failed" in traceback
    assert failed.params["corpus_00"] == CORPUS[0].line  # the user's own data, as written
    assert failed.tags["note_00"] != CORPUS[0].line  # handed to the product: masked
    for stored in runs.values():  # the diff is there, redacted, on both paths
        diff = stored.artifacts[layout.GIT_DIFF_ARTIFACT].decode()
        assert "+lr = 0.2" in diff
        assert "***" in diff

    for name, value in ENV.items():  # audit reads this process's environment
        monkeypatch.setenv(name, value)
    said = commands(
        capsys, sqlite_tracking_uri, failed.info["run_id"], runs["corpus-plain"].info["run_id"]
    )
    markdown = said[next(k for k in said if k.endswith("--format markdown"))]
    assert "params.corpus_00" in markdown  # the user's params are compared, masked
    assert "[masked #" in markdown

    runs = read_back(client, tmp_path, "after")  # with the report --log-to stored
    assert any(path.startswith(layout.REPORT_DIR) for path in runs["corpus-plain"].artifacts)
    problems = [hit for stored in runs.values() for hit in product_hits(stored)]
    problems += leaks(spool_text(spool_dir), "the spool")
    for done, label in ((decorated, "decorated"), (plain, "plain")):
        problems += leaks(done.stdout, f"{label} stdout") + leaks(done.stderr, f"{label} stderr")
    for argv, text in said.items():
        problems += leaks(text, f"`fingerprint {argv}`")
    assert problems == []


def test_no_secret_of_the_corpus_is_in_the_spool_of_an_offline_run(tmp_path: Path) -> None:
    repo = planted_repo(tmp_path)
    spool = tmp_path / "spool"
    done = run_job(repo, "http://127.0.0.1:9", spool, "decorated", "1")
    assert "training failed as planned" in done.stdout, done.stderr
    kept = spool_text(spool)
    assert "traceback.txt" in kept or any(p.name == "traceback.txt" for p in spool.rglob("*"))
    assert "+lr = 0.2" in kept  # the diff was spooled, redacted
    assert leaks(kept, "the spool") + leaks(done.stdout + done.stderr, "the output") == []


def test_the_diff_is_redacted_off_the_callers_thread(
    sqlite_tracking_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = planted_repo(tmp_path)
    monkeypatch.chdir(repo)
    scans: list[tuple[str, bool]] = []

    def recording(text: str, *args: object, **kwargs: object) -> str:
        scans.append((threading.current_thread().name, "+lr = 0.2" in text))
        return real(text, *args, **kwargs)  # type: ignore[arg-type]

    real = tagging.redact_text
    monkeypatch.setattr(tagging, "redact_text", recording)

    @mfp.fingerprinted(experiment="thread")
    def train() -> None:
        """Trains until the diff has been scanned (the spool thread takes it within a second)."""
        deadline = time.monotonic() + 60
        step = 0
        while not any(is_diff for _, is_diff in scans) and time.monotonic() < deadline:
            mfp.log_metrics({"loss": 1.0}, step=step)
            time.sleep(0.01)
            step += 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train()
    diff_scans = [thread for thread, is_diff in scans if is_diff]
    assert diff_scans, scans
    assert threading.main_thread().name not in diff_scans


def test_planted_entries_are_what_they_say() -> None:
    """Each entry's secret sits inside its line, so planting the line plants the secret."""
    assert all(isinstance(e, Planted) and e.secret in e.line for e in CORPUS)
