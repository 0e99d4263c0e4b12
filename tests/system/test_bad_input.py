"""Malformed input for the CLI and the API: one clear line, exit status 2, never a traceback.

The corpus covers what users and broken pipelines actually hand over: files cut short, empty,
binary, nested past any real record, huge, of the wrong schema; run references that lead
nowhere; tracking URIs that cannot work (credentials in them must not be echoed back); values
MLflow refuses (keys with illegal characters, tag values past 8000 characters).

File inputs run ``fingerprint`` as a real process (cheap: no mlflow import); inputs that need a
store run ``main()`` in this process, with a few of them repeated as processes to prove the
process-level contract (stderr, exit status) end to end.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.cli.main import main
from mlflow_fingerprint.model.fingerprint import Fingerprint, FingerprintError
from support.paths import FIXTURES
from support.stored import cli as run_cli

FIXTURE = FIXTURES / "fingerprints" / "cpu.json"
GOOD = FIXTURE.read_text()
SECRET_PASSWORD = "hunter2-Zq8rT5vB"


def record(**changes: Any) -> str:
    data = json.loads(GOOD)
    for key, value in changes.items():
        if value is ...:
            del data[key]
        else:
            data[key] = value
    return json.dumps(data)


def nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {}
    top = node
    for _ in range(depth):
        node["a"] = {}
        node = node["a"]
    return top


# name -> file content (bytes or str). Each is read by `show FILE` and `diff FILE GOOD`.
BAD_FILES: dict[str, bytes | str] = {
    "truncated": GOOD[: len(GOOD) // 2],
    "truncated-one-byte": GOOD[:1],
    "empty": b"",
    "whitespace": b"  \n\t ",
    "binary": bytes(range(256)) * 8,
    "png-header": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 64,
    "invalid-utf8": b'{"schema_version": 1, "gpu": "\xff\xfe"}',
    "nul-bytes": b"\x00" * 1024,
    "deep-array": "[" * 100_000 + "]" * 100_000,
    "deep-record": record(gpu=nested(500)),
    "huge-array": "[" + ",".join(["1"] * 2_000_000) + "]",
    "top-level-list": b"[]",
    "top-level-string": b'"fingerprint"',
    "top-level-number": b"42",
    "top-level-null": b"null",
    "schema-missing": record(schema_version=...),
    "schema-zero": record(schema_version=0),
    "schema-negative": record(schema_version=-3),
    "schema-string": record(schema_version="1"),
    "schema-float": record(schema_version=1.5),
    "schema-bool": record(schema_version=True),
    "schema-null": record(schema_version=None),
    "schema-newer": record(schema_version=99),
    "section-not-object": record(gpu=[1, 2, 3]),
    "section-string": record(numerics="tf32"),
    "hashes-not-strings": record(hashes={"fingerprint": 5}),
    "hashes-list": record(hashes=["abc"]),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bad-input")
    out = {}
    for name, content in BAD_FILES.items():
        path = folder / f"{name}.json"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        out[name] = path
    (folder / "good.json").write_text(GOOD)
    out["good"] = folder / "good.json"
    (folder / "a-directory.json").mkdir()
    out["a-directory"] = folder / "a-directory.json"
    return out


def assert_one_line_exit_2(code: int, out: str, err: str) -> str:
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fingerprint "), lines[0]
    return lines[0]


def file_args(files: dict[str, Path], name: str, command: str) -> list[str]:
    return [command, str(files[name])] + ([str(files["good"])] if command == "diff" else [])


@pytest.mark.parametrize("name", sorted(BAD_FILES))
@pytest.mark.parametrize("command", ["show", "diff"])
def test_bad_fingerprint_file_exits_2_with_one_line(
    files: dict[str, Path], name: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """In this process (``main()``: the command line's own code, an exception it let out would
    fail the test); a process of its own per file, as below, would add a second of start-up
    to each of these 54 cases and check nothing more."""
    code = main(file_args(files, name, command))
    out, err = capsys.readouterr()
    line = assert_one_line_exit_2(code, out, err)
    assert f"{name}.json" in line  # the message names the file it is about


@pytest.mark.parametrize(("name", "command"), [("truncated", "show"), ("binary", "diff")])
def test_a_bad_fingerprint_file_is_one_line_from_the_installed_command_too(
    files: dict[str, Path], name: str, command: str
) -> None:
    """The same as a process: nothing the interpreter prints on its own way out."""
    proc = run_cli(*file_args(files, name, command))
    line = assert_one_line_exit_2(
        proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    )
    assert f"{name}.json" in line


# -- inputs that need a store: in this process ----------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, mlflow_db_template: Path) -> dict[str, str]:
    """A sqlite store with a good run, a run without a fingerprint, and runs whose fingerprint
    artifact is damaged."""
    from mlflow import MlflowClient

    folder = tmp_path_factory.mktemp("bad-input-store")
    db = folder / "mlflow.db"
    shutil.copyfile(mlflow_db_template, db)
    uri = f"sqlite:///{db}"
    client = MlflowClient(uri)
    exp = client.create_experiment("bad-input", artifact_location=str(folder / "artifacts"))
    ids = {"uri": uri}
    newer = {layout.TAG_SCHEMA: "99", layout.TAG_HASH: "0123456789abcdef"}
    artifacts = {  # name -> (fingerprint artifact, tags)
        "good": (GOOD.encode(), {}),
        "truncated": (GOOD[:500].encode(), {}),
        "binary": (bytes(range(256)), {}),
        "schema-zero": (record(schema_version=0).encode(), {}),
        "nofp": (None, {}),
        # a newer release's run: its record and its tags say schema 99; one has only the tags
        "schema-99": (record(schema_version=99).encode(), newer),
        "tags-99": (None, newer),
    }
    for name, (content, tags) in artifacts.items():
        run = client.create_run(exp, run_name=name, tags=tags)
        if content is not None:
            src = folder / name / layout.FINGERPRINT_FILE
            src.parent.mkdir()
            src.write_bytes(content)
            client.log_artifact(run.info.run_id, str(src), layout.ARTIFACT_DIR)
        client.set_terminated(run.info.run_id)
        ids[name] = run.info.run_id
    client.create_run(exp, run_name="twin")
    client.create_run(exp, run_name="twin")
    ids.update(fifo_experiment(client, folder))
    return ids


def fifo_experiment(client: Any, folder: Path) -> dict[str, str]:
    """Experiment ``fifo``: three runs with a record and a metric, and one whose record
    artifact is a FIFO on the store's disk (issue 45: every reader waited on it for ever)."""
    exp = client.create_experiment("fifo", artifact_location=str(folder / "fifo-artifacts"))
    ids = {}
    for name in ("r0", "r1", "r2", "fifo"):
        run = client.create_run(exp, run_name=name)
        client.log_metric(run.info.run_id, "loss", 1.0 + len(ids), step=0)
        record = Path(run.info.artifact_uri) / layout.FINGERPRINT_ARTIFACT
        record.parent.mkdir(parents=True)
        if name == "fifo":
            os.mkfifo(record)
        else:
            record.write_text(GOOD)
        client.set_terminated(run.info.run_id)
        ids[name] = run.info.run_id
    return ids


@pytest.fixture(autouse=True)
def restore_environ() -> Iterator[None]:
    """``main()`` sets MLFLOW_TRACKING_URI and CLI defaults in os.environ, as a process would;
    this process must get its own environment back."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


UNREACHABLE = ("--tracking-uri", "http://127.0.0.1:9")
# (id, argv with {placeholders}, words the one line must contain)
STORE_CASES: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("unknown-run-id", ["show", "0" * 32, "--tracking-uri", "{uri}"], ("no run",)),
    ("unknown-run-id-diff", ["diff", "{good}", "f" * 32, "--tracking-uri", "{uri}"], ("no run",)),
    ("runs-uri-not-hex", ["show", "runs:/not-a-run-id", "--tracking-uri", "{uri}"], ("run id",)),
    ("runs-uri-empty", ["show", "runs:/", "--tracking-uri", "{uri}"], ("run id",)),
    ("run-without-fingerprint", ["show", "{nofp}", "--tracking-uri", "{uri}"], ("no fingerprint",)),
    (
        "run-without-fingerprint-diff",
        ["diff", "{good}", "{nofp}", "--tracking-uri", "{uri}"],
        ("no fingerprint",),
    ),
    (
        "run-without-fingerprint-find",
        ["find", "{nofp}", "--tracking-uri", "{uri}"],
        ("no fingerprint",),
    ),
    (
        "run-fingerprint-truncated",
        ["show", "{truncated}", "--tracking-uri", "{uri}"],
        ("not a fingerprint",),
    ),
    (
        "run-fingerprint-binary",
        ["diff", "{binary}", "{good}", "--tracking-uri", "{uri}"],
        ("not a fingerprint",),
    ),
    (
        "run-fingerprint-schema-zero",
        ["show", "{schema-zero}", "--tracking-uri", "{uri}"],
        ("schema_version",),
    ),
    ("run-name-without-experiment", ["show", "good", "--tracking-uri", "{uri}"], ("-e",)),
    (
        "run-name-unknown",
        ["show", "nobody", "-e", "bad-input", "--tracking-uri", "{uri}"],
        ("no run named",),
    ),
    (
        "run-name-ambiguous",
        ["show", "twin", "-e", "bad-input", "--tracking-uri", "{uri}"],
        ("ambiguous",),
    ),
    (
        "experiment-unknown",
        ["show", "good", "-e", "no-such-exp", "--tracking-uri", "{uri}"],
        ("no experiment",),
    ),
    (
        "run-name-both-quotes",
        ["find", "a'b\"c", "-e", "bad-input", "--tracking-uri", "{uri}"],
        ("quote",),
    ),
    ("empty-reference", ["show", "", "--tracking-uri", "{uri}"], ()),
    ("blank-reference", ["diff", "   ", "{good}", "--tracking-uri", "{uri}"], ()),
    ("directory-reference", ["show", "{tmp}", "--tracking-uri", "{uri}"], ()),
    ("file-is-a-directory", ["show", "{tmp}/dir.json"], ("cannot read",)),
    (
        "missing-file",
        ["diff", "{tmp}/missing.json", "{good}", "--tracking-uri", "{uri}"],
        ("cannot read",),
    ),
    ("uri-unreachable-server", ["show", "{good}", *UNREACHABLE], ("127.0.0.1:9",)),
    ("uri-unreachable-find", ["find", "{good}", *UNREACHABLE], ("127.0.0.1:9",)),
    ("uri-unknown-scheme", ["show", "{good}", "--tracking-uri", "nosuchscheme://nowhere"], ()),
    (
        "uri-sqlite-missing-dir",
        ["show", "{good}", "--tracking-uri", "sqlite:////nonexistent-dir/sub/mlflow.db"],
        (),
    ),
    (
        "uri-with-password-unreachable",
        ["show", "{good}", "--tracking-uri", f"http://alice:{SECRET_PASSWORD}@127.0.0.1:9"],
        (),
    ),
    (
        "uri-postgres-unreachable",
        [
            "show",
            "{good}",
            "--tracking-uri",
            f"postgresql+psycopg2://alice:{SECRET_PASSWORD}@127.0.0.1:9/db",
        ],
        (),
    ),
    ("negative-atol", ["diff", "{tmp}/g.json", "{tmp}/g.json", "--atol", "-1"], ("atol",)),
    (
        "zero-max-results",
        ["find", "{good}", "--max-results", "0", "--tracking-uri", "{uri}"],
        ("max-results",),
    ),
    (
        "output-unwritable",
        ["diff", "{tmp}/g.json", "{tmp}/g.json", "-o", "/nonexistent/out.txt"],
        ("cannot write",),
    ),
    ("sync-missing-spool-dir", ["sync", "--spool-dir", "/nonexistent/spool"], ("spool",)),
    *(
        (f"fifo-{argv[0]}", [*argv, "--tracking-uri", "{uri}"], ("{fifo}", "not a regular file"))
        for argv in (
            ["show", "{fifo}"],
            ["audit", "{fifo}"],
            ["diff", "{r0}", "{fifo}"],
            ["explain", "fifo", "--metric", "loss"],
        )
    ),
    *(
        (
            f"schema-99-{argv[0]}-{run}",
            [*argv, "--tracking-uri", "{uri}"],
            ("schema_version 99", "newer than this release", "pip install --upgrade"),
        )
        for run in ("{schema-99}", "{tags-99}")
        for argv in (
            ["show", run],
            ["diff", run, "{good}"],
            ["diff", "{good}", run, "--format", "markdown"],
            ["find", run],
            ["rerun", run],
            ["bisect", run, "{good}"],
        )
    ),
]


def fill(argv: list[str], store: dict[str, str], tmp: Path) -> list[str]:
    values = {**store, "tmp": str(tmp)}
    return [a.format(**values) if "{" in a else a for a in argv]


@pytest.fixture
def case_dir(tmp_path: Path) -> Path:
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "g.json").write_text(GOOD)
    return tmp_path


# A store that does not answer must be reported in seconds, not after minutes of retries.
FAIL_FAST_S = 30


# A stored file that is a FIFO is refused at once: the test's own time, fixtures aside.
FIFO_S = 5


def store_params() -> list[Any]:
    marks = {
        "uri-": [pytest.mark.timeout(FAIL_FAST_S)],
        "fifo-": [pytest.mark.timeout(FIFO_S, func_only=True)],
    }
    return [
        pytest.param(a, w, id=i, marks=marks.get(i[: i.find("-") + 1], ()))
        for i, a, w in STORE_CASES
    ]


@pytest.mark.parametrize(("argv", "words"), store_params())
def test_bad_reference_or_store_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str],
    store: dict[str, str],
    case_dir: Path,
    argv: list[str],
    words: tuple[str, ...],
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a warning is not the error line; the process test
        code = main(fill(argv, store, case_dir))  # below checks what a user's stderr shows
    out, err = capsys.readouterr()
    line = assert_one_line_exit_2(code, out, err)
    for word in words:
        assert fill([word], store, case_dir)[0] in line, line
    assert SECRET_PASSWORD not in line, "a password from the tracking URI was echoed"


@pytest.mark.parametrize(
    "case",
    [
        "unknown-run-id",
        "run-without-fingerprint",
        "uri-unreachable-server",
        "uri-postgres-unreachable",
        "sync-missing-spool-dir",
    ],
)
def test_store_errors_as_a_process(store: dict[str, str], case_dir: Path, case: str) -> None:
    [argv] = [a for i, a, _ in STORE_CASES if i == case]
    proc = run_cli(*fill(argv, store, case_dir), cwd=case_dir, timeout=FAIL_FAST_S)
    err = proc.stderr.decode(errors="replace")
    assert_one_line_exit_2(proc.returncode, proc.stdout.decode(errors="replace"), err)
    assert SECRET_PASSWORD not in err


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["sync", "--timeout", value], "--timeout")
        for value in ("-1", "0", "nan", "inf", "1e999", "1e12")
    ]
    + [
        (["rerun", "RUN", "--timeout", "-5"], "--timeout"),
        (["bisect", "A", "B", "--timeout", "nan"], "--timeout"),
        (["rerun", "RUN", "--until-step", "-1"], "--until-step"),
        (["bisect", "A", "B", "--until-step", str(10**30)], "--until-step"),
        (["find", "RUN", "--max-results", str(10**12)], "--max-results"),
        (["find", "RUN", "--max-results", "-3"], "--max-results"),
        (["diff", "a.json", "b.json", "--atol", "nan"], "--atol"),
        (["diff", "a.json", "b.json", "--rtol=-inf"], "--rtol"),
        (["diff", "a.json", "b.json", "--atol", "1e999"], "--atol"),
    ],
)
def test_a_number_out_of_range_exits_2_with_one_line_before_any_work(
    capsys: pytest.CaptureFixture[str], argv: list[str], option: str
) -> None:
    """argparse takes ``nan``, ``inf``, ``-1`` and any size of integer; each is refused, naming
    the option and what it accepts, before a store or a file is touched."""
    code = main(argv)
    out, err = capsys.readouterr()
    line = assert_one_line_exit_2(code, out, err)
    assert option in line
    assert "error:" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["find", "x", "--same", "bogus"],
        ["diff", "only-one"],
        ["show"],
        ["diff", "a", "b", "--atol", "not-a-number"],
        ["nosuchcommand"],
    ],
)
def test_bad_arguments_exit_2_without_traceback(argv: list[str]) -> None:
    """argparse's own errors: usage, then one ``error:`` line; exit 2 and no traceback."""
    proc = run_cli(*argv)
    err = proc.stderr.decode()
    assert proc.returncode == 2
    assert "Traceback" not in err
    assert "error:" in err.strip().splitlines()[-1]


# -- the Python API: the documented exception, a one-line message --------------------------


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert text
    assert "\n" not in text.strip(), repr(text)
    return text


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_api_load_raises_fingerprint_error(files: dict[str, Path], name: str) -> None:
    with pytest.raises(FingerprintError) as info:
        Fingerprint.load(files[name])
    one_line(info.value)
    with pytest.raises(FingerprintError) as info:
        Fingerprint.from_json(files[name].read_bytes())
    one_line(info.value)


def test_api_load_missing_and_directory(files: dict[str, Path], tmp_path: Path) -> None:
    for path in (tmp_path / "missing.json", files["a-directory"]):
        with pytest.raises(FingerprintError) as info:
            Fingerprint.load(path)
        one_line(info.value)


@pytest.mark.parametrize(
    "name", ["truncated", "empty", "binary", "deep-record", "schema-string", "section-not-object"]
)
def test_api_diff_raises_fingerprint_error(files: dict[str, Path], name: str) -> None:
    with pytest.raises(FingerprintError) as info:
        mfp.diff(str(files[name]), str(files["good"]))
    one_line(info.value)


@pytest.mark.parametrize("ref", ["{missing}", 42, None, "", "0" * 32, "{nofp}", "runs:/x"])
def test_api_diff_bad_references(store: dict[str, str], tmp_path: Path, ref: Any) -> None:
    if isinstance(ref, str):
        ref = ref.format(missing=tmp_path / "missing.json", **store)
    with pytest.raises(FingerprintError) as info:
        mfp.diff(ref, FIXTURE, tracking_uri=store["uri"])
    one_line(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"seed": -1},
        {"seed": "0"},
        {"seed": 2**64},
        {"seed": True},
        {"deterministic": "sometimes"},
        {"deterministic": 1.5},
    ],
)
def test_api_bad_decorator_arguments_fail_before_training(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"seed|deterministic") as info:
        mfp.fingerprinted(**kwargs)
    one_line(info.value)


# -- values MLflow refuses -------------------------------------------------------------------


def test_tag_value_over_8000_characters_is_clipped_and_the_run_kept(
    sqlite_tracking_uri: str,
) -> None:
    from mlflow import MlflowClient

    @mfp.fingerprinted(experiment="long-tag", run_name="long", tags={"note": "x" * 9000})
    def train() -> dict[str, float]:
        for step in range(5):
            mfp.log_metrics({"loss": float(step)}, step=step)
        return {"val_error": 0.5}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train()
    client = MlflowClient(sqlite_tracking_uri)
    exp = client.get_experiment_by_name("long-tag")
    [run] = client.search_runs([exp.experiment_id])
    assert 0 < len(run.data.tags["note"]) <= 8000
    assert len(client.get_metric_history(run.info.run_id, "loss")) == 5
    assert run.data.tags.get(layout.TAG_HASH)


@pytest.mark.parametrize(
    "key", ["bad key!", "semi;colon", "../escape", "/abs", "tab\tkey", "k" * 300]
)
def test_tag_key_mlflow_refuses_does_not_lose_the_run(sqlite_tracking_uri: str, key: str) -> None:
    """A user tag MLflow would refuse must either be refused before training (ValueError, one
    line) or be left out with a warning, the run and every metric value still recorded."""
    from mlflow import MlflowClient

    try:
        decorator = mfp.fingerprinted(experiment="bad-key", run_name="bad-key", tags={key: "v"})
    except ValueError as exc:
        one_line(exc)
        return

    @decorator
    def train() -> dict[str, float]:
        for step in range(5):
            mfp.log_metrics({"loss": float(step)}, step=step)
        return {"val_error": 0.5}

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert train() == {"val_error": 0.5}
    client = MlflowClient(sqlite_tracking_uri)
    exp = client.get_experiment_by_name("bad-key")
    runs = client.search_runs([exp.experiment_id]) if exp else []
    assert len(runs) == 1, "the run was lost because of one bad tag key"
    run = runs[0]
    assert sorted(m.step for m in client.get_metric_history(run.info.run_id, "loss")) == [
        0,
        1,
        2,
        3,
        4,
    ]
    assert run.data.tags.get(layout.TAG_HASH)


@pytest.mark.parametrize("key", ["bad key!", "../up", "/abs", "", "k" * 300])
def test_metric_key_mlflow_refuses_is_dropped_with_a_warning(
    sqlite_tracking_uri: str,
    key: str,
) -> None:
    from mlflow import MlflowClient

    @mfp.fingerprinted(experiment="bad-metric", run_name="m")
    def train() -> None:
        for step in range(3):
            mfp.log_metrics({key: 1.0, "loss": float(step)}, step=step)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train()
    assert any(key[:40] in str(w.message) for w in caught)
    client = MlflowClient(sqlite_tracking_uri)
    [run] = client.search_runs([client.get_experiment_by_name("bad-metric").experiment_id])
    assert sorted(m.step for m in client.get_metric_history(run.info.run_id, "loss")) == [0, 1, 2]
