"""``fingerprint diff``: output formats, exit status, --log-to, and every bad input."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mlflow_fingerprint import layout
from mlflow_fingerprint.cli.main import main
from support.records import cpu_record, edit, log_run, new_store, seeded, write

ANSI = re.compile(r"\x1b\[")
FINGERPRINT = str(Path(sys.executable).with_name("fingerprint"))


pytestmark = pytest.mark.usefixtures("restore_environ")


@pytest.fixture(scope="module")
def store(tmp_path_factory, mlflow_db_template):
    return new_store(tmp_path_factory.mktemp("cli-diff-store"), mlflow_db_template)


@pytest.fixture(scope="module")
def runs(store):
    record = seeded(cpu_record(), 0)
    loss = [2.0, 1.5, 1.0, 0.8, 0.7]
    return {
        "a": log_run(store, "cli", "a", record, {"loss": loss, "acc": [0.9]}),
        "same": log_run(store, "cli", "same", record, {"loss": loss, "acc": [0.9]}),
        "seed1": log_run(
            store,
            "cli",
            "seed1",
            seeded(record, 1),
            {"loss": [*loss[:3], 0.81, 0.72], "acc": [0.91]},
        ),
        "nofp": log_run(store, "cli", "nofp", None, {"loss": loss}),
        "dup1": log_run(store, "cli", "dup", record, {"loss": loss}),
        "dup2": log_run(store, "cli", "dup", record, {"loss": loss}),
    }


def run_cli(capsys, *args):
    code = main(["diff", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_identical_runs_give_same_results_and_exit_0(capsys, store, runs):
    code, out, _ = run_cli(capsys, runs["a"], runs["same"], "--tracking-uri", store)
    assert code == 0
    assert out.startswith("verdict: same_results")
    assert not ANSI.search(out), "piped output is plain"


def test_differing_runs_exit_1_and_name_the_seed_first(capsys, store, runs):
    code, out, _ = run_cli(
        capsys, "a", "seed1", "-e", "cli", "--tracking-uri", store, "--format", "json"
    )
    report = json.loads(out)
    assert code == 1
    assert report["verdict"] == "explained"
    assert report["differences"][0]["field"] == "seeds.requested"
    assert report["a"]["run_id"] == runs["a"]
    first = report["differences"][0]
    assert set(first) >= {"field", "a", "b", "effect", "explanation", "rank"}
    assert (first["a"], first["b"], first["effect"], first["rank"]) == (0, 1, "randomness", 1)
    loss = next(m for m in report["metrics"] if m["name"] == "loss")
    assert set(loss) >= {"name", "a", "b", "abs_diff", "rel_diff", "equal", "first_divergence_step"}
    assert (loss["first_divergence_step"], loss["equal"]) == (3, False)


def test_runs_uri_and_json_file_refs(capsys, tmp_path, store, runs):
    path = write(tmp_path, "a", seeded(cpu_record(), 0))
    code, out, _ = run_cli(capsys, f"runs:/{runs['a']}", path, "--tracking-uri", store)
    assert code == 0
    assert "no_metrics" in out


def test_all_shows_differences_that_change_nothing(capsys, tmp_path):
    record = cpu_record()
    a = write(tmp_path, "a", record)
    b = write(tmp_path, "b", edit(record, **{"platform.hostname": "elsewhere"}))
    code, out, _ = run_cli(capsys, a, b)
    assert code == 0
    assert "platform.hostname" not in out
    assert "--all shows them" in out
    code, out, _ = run_cli(capsys, a, b, "--all")
    assert code == 0
    assert "platform.hostname" in out


def test_markdown_and_html_outputs(capsys, tmp_path, store, runs):
    code, out, _ = run_cli(
        capsys, runs["a"], runs["seed1"], "--tracking-uri", store, "--format", "markdown"
    )
    assert code == 1
    assert out.startswith("### fingerprint diff: **explained**")
    assert "| 1 | `seeds.requested` | `0` | `1` | randomness |" in out
    html_file = tmp_path / "report.html"
    code, out, _ = run_cli(
        capsys,
        runs["a"],
        runs["seed1"],
        "--tracking-uri",
        store,
        "--format",
        "html",
        "--output",
        str(html_file),
    )
    html = html_file.read_text()
    assert code == 1
    assert out == ""
    assert "<script" not in html
    assert "<link" not in html
    link = r'<a href="(https://[^"]+)">\1</a>'
    assert re.findall(link, html), "each rule's public page is a link a reader can open"
    # Besides those links, nothing external: no stylesheet, script or image to fetch.
    assert re.findall(r"https?://[^\"]+", re.sub(link, "", html)) == ["http://www.w3.org/2000/svg"]
    assert html.count("<polyline") == 2  # A's and B's loss curves
    assert "<circle" not in html  # acc was logged once per run: a table row, not a lone dot
    assert "<h3>loss</h3>" in html
    assert "<h3>acc</h3>" not in html
    assert "<td><code>acc</code></td>" in html
    assert 'class="divergence"' in html
    assert "first divergence: step 3" in html
    assert "seeds.requested" in html
    assert "explained" in html


def test_rich_text_has_the_same_content_in_colour(store, runs):
    from mlflow_fingerprint import diff
    from mlflow_fingerprint.present import render

    report = diff(runs["a"], runs["seed1"], tracking_uri=store)
    coloured = render(report, "text", rich=True)
    assert ANSI.search(coloured)
    plain = ANSI.sub("", coloured)
    assert "seeds.requested" in plain
    assert "explained" in plain
    assert "step 3" in plain


def test_log_to_stores_the_report_as_an_artifact(capsys, store, runs):
    from mlflow import MlflowClient

    code, _, err = run_cli(
        capsys,
        runs["a"],
        runs["seed1"],
        "--tracking-uri",
        store,
        "--format",
        "markdown",
        "--log-to",
        runs["seed1"],
    )
    assert code == 1
    path = f"{layout.REPORT_DIR}/{runs['a'][:12]}_vs_{runs['seed1'][:12]}.md"
    listed = MlflowClient(store).list_artifacts(runs["seed1"], layout.REPORT_DIR)
    assert [a.path for a in listed] == [path]
    # one message, wrapped to fit 100 columns
    assert f"report stored in run {runs['seed1']} as {path}" in " ".join(err.split())
    assert max(map(len, err.splitlines())) <= 100, err


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


BAD = {
    "unknown run id": (["0" * 32, "{a}"], "no run with id"),
    "bad runs: uri": (["runs:/xyz", "{a}"], "does not name a run id"),
    "name without -e": (["a", "{a}"], "give its experiment with -e"),
    "unknown name": (["nobody", "{a}", "-e", "cli"], "no run named 'nobody'"),
    "ambiguous name": (["dup", "{a}", "-e", "cli"], "is ambiguous"),
    "unknown experiment": (["a", "{a}", "-e", "nowhere"], "no experiment named 'nowhere'"),
    "run without fingerprint": (["{nofp}", "{a}"], "has no fingerprint"),
    "missing file": (["{tmp}/missing.json", "{a}"], "cannot read"),
    "missing file alone": (["{tmp}/missing.json"], "cannot read {tmp}/missing.json: no such file"),
    "invalid json": (["{tmp}/garbage.json", "{a}"], "not valid JSON"),
    "not a fingerprint": (["{tmp}/other.json", "{a}"], "no integer schema_version"),
    "section not an object": (["{tmp}/badsection.json", "{a}"], "section 'gpu' is not an object"),
    "empty ref": (["", "{a}"], "cannot compare"),
    "negative tolerance": (["{a}", "{a}", "--atol", "-1"], "--atol must be a finite number >= 0"),
    "unknown --log-to run": (["{a}", "{a}", "--log-to", "f" * 32], "--log-to: no run"),
    "unwritable --output": (
        ["{a}", "{a}", "--output", "{tmp}/no/such/dir/out.txt"],
        "cannot write",
    ),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_input_exits_2_with_one_line_and_no_traceback(case, capsys, tmp_path, store, runs):
    (tmp_path / "garbage.json").write_text("{not json")
    (tmp_path / "other.json").write_text('{"hello": 1}')
    (tmp_path / "badsection.json").write_text('{"schema_version": 1, "gpu": 3}')
    args, message = BAD[case]
    args = [a.format(a=runs["a"], nofp=runs["nofp"], tmp=tmp_path) for a in args]
    message = message.format(tmp=tmp_path)
    code, out, err = run_cli(capsys, *args, "--tracking-uri", store)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("fingerprint diff: error: ")
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize("uri", ["http://127.0.0.1:{port}", "sqlite:///{tmp}/no/such/mlflow.db"])
def test_a_store_that_does_not_answer_exits_2(uri, tmp_path):
    uri = uri.format(port=closed_port(), tmp=tmp_path)
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri}
    done = subprocess.run(
        [FINGERPRINT, "diff", "0" * 32, "1" * 32],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert uri in lines[0]
    assert not (tmp_path / "no").exists(), "a reader must not create a store"


def diff_in_a_fresh_process(*argv: str, heavy: tuple[str, ...]) -> tuple[str, str]:
    """``fingerprint diff ARGV --format json`` in a new interpreter: its exit code and which of
    ``heavy`` it imported (the last line of its stderr), and its report."""
    code = (
        "import sys\n"
        "from mlflow_fingerprint.cli.main import main\n"
        f"rc = main(['diff', *{list(argv)!r}, '--format', 'json'])\n"
        f"heavy = [m for m in {heavy!r} if m in sys.modules]\n"
        "print(rc, heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    return done.stderr.strip().rsplit("\n", 1)[-1], done.stdout


def test_json_file_diff_imports_neither_torch_nor_mlflow_nor_numpy(tmp_path):
    """Nor numpy: metric histories are numpy arrays, and two files hold none (56 ms of a
    0.23 s answer when the comparator's summary rules imported them for their types)."""
    a = write(tmp_path, "a", cpu_record())
    b = write(tmp_path, "b", seeded(cpu_record(), 3))
    said, report = diff_in_a_fresh_process(a, b, heavy=("mlflow", "numpy", "sqlalchemy", "torch"))
    assert said == "1 []"
    assert json.loads(report)["differences"][0]["field"] == "seeds.requested"


def test_a_local_store_diff_imports_neither_mlflow_nor_sqlalchemy(tmp_path, mlflow_db_template):
    """Two runs of a sqlite file are read from its tables: the command imports neither MLflow nor
    SQLAlchemy (which reading the URL through ``make_url`` alone cost 0.16-0.43 s)."""
    uri = new_store(tmp_path, mlflow_db_template)
    a = log_run(uri, "x", "a", cpu_record(), {"loss": [1.0, 0.5]}, seed=0)
    b = log_run(uri, "x", "b", seeded(cpu_record(), 3), {"loss": [1.0, 0.6]}, seed=3)
    said, report = diff_in_a_fresh_process(
        a, b, "--tracking-uri", uri, heavy=("mlflow", "sqlalchemy")
    )
    assert said == "1 []"
    assert json.loads(report)["differences"][0]["field"] == "seeds.requested"


def test_newer_schema_is_refused_with_one_line(capsys, tmp_path):
    newer = json.loads(json.dumps(cpu_record()))
    newer["schema_version"] = 99
    good = tmp_path / "newer.json"
    good.write_text(json.dumps(newer))
    code, out, err = run_cli(capsys, str(good), str(good), "--format", "json")
    assert code == 2
    assert out == ""
    assert "schema_version 99, newer than this release reads" in err
    assert "upgrade" in err
    assert err.count("\n") == 1
