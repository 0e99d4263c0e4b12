"""``explain`` on real sqlite stores made from recorded fingerprints: runs left out and why,
runs without a fingerprint, GPU and torch confounded, outliers and their diff, metric choice,
``--at``, ``--filter``, batched reads, and every bad input as one line with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.cli.main import main
from mlflow_fingerprint.errors import ExplainError, FingerprintError
from mlflow_fingerprint.explain.experiment import ONLY_FINGERPRINTED
from mlflow_fingerprint.present.explain import render
from support.records import cpu_record, edit, gpu_record, log_run, new_store, seeded

pytestmark = pytest.mark.usefixtures("restore_environ")

NOISE = (0.0, 0.02, -0.015, 0.01)
LOSS = [2.0, 1.5, 1.2]  # a curve every run logs: not the summary metric


def _run(store: str, experiment: str, name: str, record, lr: float, value, **kwargs) -> str:
    histories = {"loss": LOSS} if value is None else {"loss": LOSS, "val_loss": [value]}
    return log_run(store, experiment, name, record, histories, params={"lr": lr}, **kwargs)


@pytest.fixture(scope="module")
def store(tmp_path_factory, mlflow_db_template) -> str:
    return new_store(tmp_path_factory.mktemp("explain-store"), mlflow_db_template)


@pytest.fixture(scope="module")
def mixed(store: str) -> dict[str, str]:
    """lr 0.1 (3 seeds) and 0.01 (4 seeds, one far off), fingerprinted; then runs without a
    fingerprint, one whose artifact is damaged, FAILED, RUNNING and one without the metric."""
    runs = {}
    base = cpu_record()
    for lr, mean, seeds in ((0.1, 0.5, 3), (0.01, 0.9, 4)):
        for s in range(seeds):
            record = seeded(edit(base, **{"program.call.lr": lr}), s)
            value = mean + NOISE[s] + (0.4 if (lr, s) == (0.01, 3) else 0.0)
            runs[f"{lr}-{s}"] = _run(store, "mixed", f"{lr}-{s}", record, lr, value)
    for i, lr in enumerate((0.1, 0.01, 0.1)):
        runs[f"plain-{i}"] = _run(store, "mixed", f"plain-{i}", None, lr, 0.52 + 0.38 * (lr < 0.1))
    damaged = _run(store, "mixed", "damaged", seeded(base, 9), 0.1, 0.51)
    from mlflow import MlflowClient

    MlflowClient(store).log_text(damaged, "{not json", layout.FINGERPRINT_ARTIFACT)
    runs["damaged"] = damaged
    record = seeded(edit(base, **{"program.call.lr": 0.1}), 7)
    runs["failed"] = _run(store, "mixed", "failed", record, 0.1, 3.0, status="FAILED")
    runs["running"] = _run(store, "mixed", "running", record, 0.1, 2.0, status="RUNNING")
    runs["nometric"] = _run(store, "mixed", "nometric", record, 0.1, None)
    return runs


def test_unfinished_runs_and_runs_without_the_metric_are_left_out_and_named(store, mixed) -> None:
    report = mfp.explain("mixed", tracking_uri=store)
    why = {x.run_id: x.why for x in report.left_out}
    assert why == {
        mixed["failed"]: "status FAILED",
        mixed["running"]: "status RUNNING",
        mixed["nometric"]: "no val_loss",
    }
    assert report.metric == "val_loss"  # the summary metric, though every run logged loss
    assert any("summary metric" in n for n in report.notes)
    assert report.runs == 11
    taken = mfp.explain("mixed", tracking_uri=store, include_unfinished=True)
    assert taken.runs == 13
    assert [x.run_id for x in taken.left_out] == [mixed["nometric"]]


def test_runs_without_a_fingerprint_are_named_and_explained_with_what_there_is(
    store, mixed
) -> None:
    report = mfp.explain("mixed", tracking_uri=store)
    plain = {mixed[f"plain-{i}"] for i in range(3)}
    assert set(report.missing.runs) == {*plain, mixed["damaged"]}
    assert {report.missing.coverage[r] for r in plain} == {"params"}
    assert report.missing.coverage[mixed["damaged"]] == "tags"
    assert "not valid JSON" in report.missing.why[mixed["damaged"]]
    assert "program.call.lr" in report.missing.fields  # only the fingerprints hold it
    top = report.factors[0]
    assert top.fields == ("params.lr",)
    assert top.verdict == "important"
    assert any(ONLY_FINGERPRINTED in n for n in report.notes)


def test_the_suggested_filter_keeps_the_fingerprinted_runs(store, mixed) -> None:
    report = mfp.explain("mixed", tracking_uri=store, filter_string=ONLY_FINGERPRINTED)
    assert report.missing.runs == (mixed["damaged"],)  # its tags say it was fingerprinted
    assert not any(ONLY_FINGERPRINTED in n for n in report.notes)
    assert report.runs == 8  # 7 fingerprinted + the damaged one, read from its tags
    assert report.factors[0].fields[0] in ("params.lr", "program.call.lr")


def test_an_outlier_points_to_the_diff_that_explains_it(store, mixed, capsys) -> None:
    report = mfp.explain("mixed", tracking_uri=store)
    (outlier,) = report.outliers
    assert outlier.run_id == mixed["0.01-3"]
    assert outlier.z > 3.5
    command = outlier.diff.split()
    assert command[:2] == ["fingerprint", "diff"]
    assert command[3] == outlier.run_id
    assert main([*command[1:], "--tracking-uri", store]) == 1  # the runs differ in their seed
    assert "seeds.requested" in capsys.readouterr().out


def test_gpu_model_and_torch_version_that_moved_together_are_one_block(store) -> None:
    a100 = edit(gpu_record("a100"), **{"torch.version": "2.5.1+cu124"})
    h100 = edit(gpu_record("h100"), **{"torch.version": "2.7.0+cu126"})
    for i, (record, value) in enumerate([(a100, 0.70), (h100, 0.80)] * 3):
        for s in range(2):
            lr = (0.1, 0.2, 0.3)[i % 3]
            run = seeded(edit(record, **{"program.call.lr": lr}), s)
            y = value + 0.1 * (i % 3) + (0.01 if s else -0.01)
            _run(store, "cluster", f"r{i}-{s}", run, lr, y)
    report = mfp.explain("cluster", tracking_uri=store)
    (block,) = [f for f in report.factors if "torch.version" in f.fields]
    assert block.confounded
    assert any(f.startswith("gpu.devices.0.") for f in block.fields)
    (separation,) = [s for s in report.separate_by if set(s.fields) <= set(block.fields)]
    assert "2.7.0+cu126" in separation.runs_needed
    assert "A100" in separation.runs_needed
    text = render(report, "text")
    words = " ".join(text.split())  # the text wraps to the terminal's width
    assert "always changed together" in words
    assert len(text.splitlines()) <= 40
    assert "To separate them: runs with" in words


def test_the_metric_at_a_step_and_runs_without_that_step(store) -> None:
    for i in range(4):
        _run(store, "curves", f"c{i}", None, 0.1 * (1 + i % 2), None, seed=i)
    log_run(store, "curves", "short", None, {"loss": [2.0]})
    report = mfp.explain("curves", tracking_uri=store, metric="loss", at=1)
    assert report.at == 1
    assert report.runs == 4
    assert [x.why for x in report.left_out] == ["no loss at step 1"]
    assert report.mean == pytest.approx(1.5)


def test_reads_are_batched_not_one_request_per_run(store, mixed, monkeypatch) -> None:
    """A spy on the real client: the runs of this local store come from its tables at once
    (``sqlite_runs``), not through the client; with a filter (MLflow's language), one search
    page; never a per-run call (records are read from the artifact folder of this store)."""
    from mlflow import MlflowClient

    calls: dict[str, int] = {}
    for name in ("search_runs", "get_run", "download_artifacts", "list_artifacts"):
        real = getattr(MlflowClient, name)

        def spy(self, *args, _real=real, _name=name, **kwargs):
            calls[_name] = calls.get(_name, 0) + 1
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(MlflowClient, name, spy)
    mfp.explain("mixed", tracking_uri=store)
    assert calls == {}
    mfp.explain("mixed", tracking_uri=store, filter_string="params.lr LIKE '%'")
    assert calls == {"search_runs": 1}


@pytest.mark.parametrize(("at", "page"), [("final", 500), (1, 500), ("final", 2), ("final", 3)])
def test_the_tables_read_by_pages_give_mlflow_s_client_s_report(
    store, mixed, monkeypatch, at, page
) -> None:
    """The same report, field for field, from the store's tables (the runs' summaries, then
    their rows ``page`` at a time) and through MLflow's client (the runs left out, the runs
    without a fingerprint, the damaged one)."""
    from mlflow_fingerprint.tracking import sqlite_runs

    metric = "val_loss" if at == "final" else "loss"
    read: list[str] = []
    real, rows = sqlite_runs.summaries, sqlite_runs.whole_rows
    monkeypatch.setattr(
        sqlite_runs, "summaries", lambda *a, **k: read.append("tables") or real(*a, **k)
    )
    monkeypatch.setattr(
        sqlite_runs,
        "whole_rows",
        lambda path, roster, experiment_id: (
            read.append("page") or p for p in rows(path, roster, experiment_id, page)
        ),
    )
    direct = mfp.explain("mixed", tracking_uri=store, metric=metric, at=at)
    assert read[0] == "tables"
    # every run chosen read once; none where all agree (at step 1 here: nothing to explain)
    assert read.count("page") == (-(-direct.runs // page) if direct.sd else 0)
    monkeypatch.setattr(sqlite_runs, "summaries", lambda *a, **k: None)
    through_client = mfp.explain("mixed", tracking_uri=store, metric=metric, at=at)
    assert direct.runs == (11 if at == "final" else 12)
    assert json.dumps(direct.to_dict()) == json.dumps(through_client.to_dict())


def test_json_is_the_contract(store, mixed) -> None:
    data = json.loads(render(mfp.explain("mixed", tracking_uri=store), "json"))
    assert {"metric", "at", "runs", "noise", "factors", "ruled_out", "outliers"} <= set(data)
    assert {"missing", "separate_by", "left_out"} <= set(data)
    assert data["at"] == "final"
    assert {o["run_id"] for o in data["outliers"]} == {mixed["0.01-3"]}
    assert all(set(o) >= {"run_id", "group", "z", "diff"} for o in data["outliers"])
    assert all(set(x) >= {"run_id", "why"} for x in data["left_out"])


# --- Bad input: one line, exit 2 ------------------------------------------------------------------


@pytest.fixture(scope="module")
def few(store: str) -> str:
    for i in range(2):
        _run(store, "few", f"f{i}", None, 0.1, 0.5 + i)
    return "few"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope"], "no experiment named 'nope'"),
        (["mixed", "--metric", "accuracy"], "no run of experiment 'mixed' logged metric"),
        (["few"], "explain needs at least 3 runs with val_loss"),
        (["mixed", "--at", "-1"], "--at must be final or a step"),
        (["mixed", "--at", "last"], "--at must be final or a step"),
        (["mixed", "--filter", "params.lr ==== 1"], "bad --filter"),
        (["mixed", "--filter", "params.lr = '7'"], "has no runs matching --filter"),
        (["mixed", "--log-to", "0123456789abcdef0123456789abcdef"], "--log-to: no run with id"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(store, mixed, few, capsys, argv, message) -> None:
    code = main(["explain", *argv, "--tracking-uri", store])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("fingerprint explain: error: ")
    assert message in err
    assert "Traceback" not in err


def test_a_store_that_is_not_there_is_one_line(tmp_path: Path, capsys) -> None:
    code = main(["explain", "x", "--tracking-uri", f"sqlite:///{tmp_path / 'none.db'}"])
    assert code == 2
    assert "no MLflow database" in capsys.readouterr().err


def test_the_api_raises_fingerprint_errors(store, few) -> None:
    with pytest.raises(ExplainError, match="at least 3 runs"):
        mfp.explain("few", tracking_uri=store)
    with pytest.raises(FingerprintError, match="no experiment named"):
        mfp.explain("nope", tracking_uri=store)


def test_a_newer_record_is_refused_and_values_from_runs_are_escaped(store) -> None:
    """A run whose fingerprint.schema tag says a newer release wrote it is left out with
    check_version's words; a param that holds markup and terminal controls is shown as data in
    every format."""
    from mlflow import MlflowClient

    hostile = "<script>x</script>\x1b]52;c;AAAA\x07|`*"
    for i, lr in enumerate(["0.1", hostile] * 3):
        _run(store, "hostile", f"h{i}", None, lr, 0.5 + (lr == hostile) + 0.01 * i)  # type: ignore[arg-type]
    newer = _run(store, "hostile", "newer", seeded(cpu_record(), 0), "0.1", 0.5)  # type: ignore[arg-type]
    MlflowClient(store).set_tag(newer, layout.TAG_SCHEMA, "99")
    report = mfp.explain("hostile", tracking_uri=store)
    (left,) = report.left_out
    assert left.run_id == newer
    assert "schema_version 99, newer than this release reads" in left.why
    text, markdown, page = (render(report, fmt) for fmt in ("text", "markdown", "html"))
    for out in (text, markdown, page):
        assert "\x1b" not in out
        assert "\x07" not in out
    assert "<script>" not in markdown
    assert "<script>" not in page
    assert "\\u001b]52" in text
    assert "&lt;script&gt;" in page
    assert json.loads(render(report, "json"))["factors"][0]["fields"] == ["params.lr"]


def test_an_infinite_run_and_values_past_any_sane_range_are_left_out_and_named(store) -> None:
    """Issue 45: MLflow stores a diverged run's inf as 1.797e308 and explain took it for a
    value: numpy's overflow warnings, ``sd inf``, "the spread is seed noise"; values near 1e200
    gave ``nan%``. They are left out, each with why, and no numpy warning is raised."""
    import warnings

    base = cpu_record()
    for s in range(4):
        _run(store, "diverged", f"d{s}", seeded(base, s), 0.1, 0.5 + NOISE[s])
    _run(store, "diverged", "inf", seeded(base, 6), 0.1, float("inf"))
    _run(store, "diverged", "huge", seeded(base, 7), 0.1, 1.5e200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy warning fails the test
        report = mfp.explain("diverged", tracking_uri=store)
    assert report.runs == 4
    why = sorted(x.why for x in report.left_out)
    assert why == [
        "val_loss is beyond the range explain analyses (±1e+100)",
        "val_loss is inf (MLflow stores it as 1.797e308)",
    ]
    assert report.noise.sd is not None
    assert 0.005 < report.noise.sd < 0.05
    text = render(report, "text")
    assert "inf" not in text.split("Left out")[0]
    assert "nan" not in text


def test_runs_apart_only_in_a_param_are_not_replicates(store) -> None:
    """Issue 45: two runs whose records are equal but whose ``params.lr`` differ were taken as
    replicates, so the noise floor was 100% of the variance next to ``params.lr`` 100%
    important. Replicates are equal in every field but the seeds, params included."""
    base = cpu_record()
    for s in range(8):
        lr = 0.1 if s % 2 else 0.01
        _run(store, "params-only", f"p{s}", seeded(base, s), lr, 0.9 - 0.4 * (s % 2) + 0.001 * s)
    report = mfp.explain("params-only", tracking_uri=store)
    assert report.noise.groups == 2
    assert report.noise.share is not None
    assert report.noise.share < 0.05
    assert report.factors[0].fields == ("params.lr",)
    assert report.factors[0].verdict == "important"


def test_a_filter_of_400_clauses_is_one_line_naming_the_filter(store, mixed, capfd) -> None:
    """Issue 45: sqlite cannot evaluate it; MLflow logged its SQL (1,657 lines) and the line
    blamed the database file. It is a bad --filter, in one line, with nothing else printed."""
    huge = " and ".join(f"params.lr != 'x{i}'" for i in range(400))
    code = main(["explain", "mixed", "--filter", huge, "--tracking-uri", store])
    out, err = capfd.readouterr()
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err[:2000]
    assert err.startswith("fingerprint explain: error: bad --filter \"params.lr != 'x0'")
    assert f"({len(huge)} characters): 400 clauses" in err
    assert "database" not in err


def test_the_metric_chosen_varies_and_one_all_runs_agree_on_is_one_line(store) -> None:
    """The demo's experiment (examples/demo.py): A, A again and B with two workers left
    unseeded, each returning ``steps`` (equal in every run) and ``val_error``. The metric picked
    is ``val_error``; ``--metric steps`` is one line saying the runs agree; the notes never
    say nothing varies but the seeds beside a field they could not estimate."""
    base = seeded(edit(cpu_record(), **{"program.options": {"num-workers": 0}}), 0)
    workers = {"num_workers": 2, "worker_init_fn": None, "generator": {"present": False}}
    b = edit(base, **{"program.options": {"num-workers": 2}, "data.loaders": [workers]})
    for name, record, error in (("A", base, 0.061), ("A-again", base, 0.061), ("B", b, 0.072)):
        histories = {"loss": LOSS, "steps": [49.0], "val_error": [error]}
        log_run(store, "demo", name, record, histories)
    report = mfp.explain("demo", tracking_uri=store)
    assert report.metric == "val_error"
    assert any("the first that varies" in n for n in report.notes), report.notes
    said = " ".join(report.notes)
    assert not ("not estimated" in said and "no recorded field varies" in said), said
    steps = mfp.explain("demo", tracking_uri=store, metric="steps")
    text = render(steps, "text")
    assert text.count("\n") == 1, text
    assert "all 3 runs agree on steps" in text
    for form in ("markdown", "html"):
        assert "no spread to explain" in render(steps, form)
    assert "all 3 runs agree on steps" in " ".join(json.loads(render(steps, "json"))["notes"])


def test_a_search_s_rows_go_page_by_page_as_their_records_are_made(
    store, replicated, monkeypatch
) -> None:
    """Through a reader, the runs' summaries and records are made from each page of the search
    as it comes, and its rows dropped: never a history's rows at once (through the REST reader
    about 1 KB a run, 215 MiB at 100,000 runs)."""
    import gc

    from mlflow_fingerprint.explain import experiment
    from mlflow_fingerprint.tracking import experiment as reads
    from mlflow_fingerprint.tracking import sqlite_runs

    monkeypatch.setattr(sqlite_runs, "summaries", lambda *a, **k: None)
    monkeypatch.setattr(reads, "SEARCH_PAGE", 3)
    alive: list[int] = []
    take = experiment._take

    def counted(read, page, *args):
        gc.collect()
        alive.append(sum(type(o) is reads.StoredRun for o in gc.get_objects()))
        return take(read, page, *args)

    monkeypatch.setattr(experiment, "_take", counted)
    report = mfp.explain(replicated, tracking_uri=store)
    assert report.runs == 8
    assert len(alive) == 3  # pages of 3, 3 and 2
    assert max(alive) <= 3, alive  # the page being made, never the runs before it


@pytest.fixture(scope="module")
def replicated(store: str) -> str:
    """Two learning rates, four seeds each, each run with every tag a run carries: each
    learning rate's first run is read, and its other three are derived from it."""
    from mlflow import MlflowClient

    from mlflow_fingerprint.tracking.tags import fingerprint_tags

    client = MlflowClient(store)
    for lr, mean in ((0.1, 0.5), (0.01, 0.9)):
        for s in range(4):
            record = seeded(edit(cpu_record(), **{"program.call.lr": lr}), s)
            run_id = _run(store, "replicated", f"{lr}-{s}", record, lr, mean + NOISE[s])
            for tag, value in fingerprint_tags(record, set()).items():
                client.set_tag(run_id, tag, value)
    return "replicated"


@pytest.mark.parametrize("tables", [True, False])
def test_the_records_are_gone_before_the_analysis(store, replicated, monkeypatch, tables) -> None:
    """The table is made from the runs' records, and nothing but the table reaches the
    analysis: no record is alive while it runs (at 100,000 runs they were 65 MiB), read from
    the store's tables or through MLflow's client. While the table is made the records are one
    ``Records``, and no replicate's record object is held (each is made as it is read)."""
    import gc

    from mlflow_fingerprint.explain import experiment
    from mlflow_fingerprint.explain.records import Records
    from mlflow_fingerprint.explain.replicas import Reseeded
    from mlflow_fingerprint.tracking import sqlite_runs

    def alive() -> tuple[int, int]:
        gc.collect()
        kinds = [type(o) for o in gc.get_objects()]  # no attribute is read
        return kinds.count(Records), kinds.count(Reseeded)

    seen: dict[str, tuple[int, int]] = {}
    build, analyse = experiment.build, experiment.analyse

    derived: list[int] = []

    def counted(step, real):
        def spy(*args):
            seen[step] = alive()
            if step == "build":
                derived.append(sum(args[0].derived))
            return real(*args)

        return spy

    monkeypatch.setattr(experiment, "build", counted("build", build))
    monkeypatch.setattr(experiment, "analyse", counted("analyse", analyse))
    if not tables:
        monkeypatch.setattr(sqlite_runs, "summaries", lambda *a, **k: None)
    report = mfp.explain(replicated, tracking_uri=store)
    assert report.runs == 8
    assert seen == {"build": (1, 0), "analyse": (0, 0)}
    assert derived == [6]  # each learning rate's replicates, made from its first run's record
