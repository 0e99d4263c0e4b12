"""``fingerprint show``, ``find`` and ``audit``: the commands that share diff's resolution."""

from __future__ import annotations

import json
import re

import pytest

from mlflow_fingerprint import layout
from mlflow_fingerprint.audit import audit
from mlflow_fingerprint.cli.main import main
from mlflow_fingerprint.compare.find import find
from support.records import cpu_record, edit, gpu_record, log_run, new_store, seeded, write

pytestmark = pytest.mark.usefixtures("restore_environ")


@pytest.fixture(scope="module")
def store(tmp_path_factory, mlflow_db_template):
    return new_store(tmp_path_factory.mktemp("cli-store"), mlflow_db_template)


@pytest.fixture(scope="module")
def runs(store):
    record = seeded(cpu_record(), 0)
    other_seed = seeded(cpu_record(), 1)
    other_env = edit(record, **{"torch.version": "2.9.0+cpu"})
    return {
        "a": log_run(store, "find", "a", record, {"loss": [1.0]}),
        "twin": log_run(store, "find", "twin", record, {"loss": [1.0]}),
        "seed1": log_run(store, "find", "seed1", other_seed, {"loss": [1.1]}),
        "elsewhere": log_run(store, "other-exp", "elsewhere", record, {"loss": [1.0]}),
        "other_env": log_run(store, "find", "other_env", other_env, {"loss": [1.0]}),
        "nofp": log_run(store, "find", "nofp", None, {"loss": [1.0]}),
    }


def cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_show_prints_the_summary_of_a_run_and_the_record_as_json(capsys, store, runs):
    code, out, _ = cli(capsys, "show", runs["a"], "--tracking-uri", store)
    assert code == 0
    assert out.startswith(f"run a ({runs['a'][:8]})")
    assert "\nseed " in out
    assert "fingerprint " in out
    code, out, _ = cli(
        capsys, "show", "a", "-e", "find", "--tracking-uri", store, "--format", "json"
    )
    assert code == 0
    assert json.loads(out)["seeds"]["requested"] == 0


def test_show_reads_a_fingerprint_file(capsys, tmp_path):
    path = write(tmp_path, "fp", cpu_record())
    code, out, _ = cli(capsys, "show", path)
    assert code == 0
    assert out.startswith(path)


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("0" * 32, "no run with id"),
        ("{nofp}", "has no fingerprint"),
        ("{tmp}/missing.json", "cannot read"),
    ],
)
def test_show_bad_input_exits_2_with_one_line(capsys, tmp_path, store, runs, ref, message):
    code, out, err = cli(
        capsys, "show", ref.format(nofp=runs["nofp"], tmp=tmp_path), "--tracking-uri", store
    )
    assert (code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1
    assert message in err


def test_find_same_fingerprint_across_experiments(store, runs):
    result = find(runs["a"], tracking_uri=store)
    found = {m.run_id for m in result.matches}
    assert found == {runs["twin"], runs["elsewhere"]}
    assert result.tag == layout.TAG_HASH


def test_find_same_env_includes_other_seeds_but_not_other_torch(store, runs):
    found = {m.run_id for m in find(runs["a"], same="env", tracking_uri=store).matches}
    assert runs["seed1"] in found
    assert runs["other_env"] not in found


def test_find_same_recipe_in_one_experiment(store, runs):
    found = {
        m.run_id
        for m in find(runs["a"], same="recipe", tracking_uri=store, experiment="find").matches
    }
    assert found == {runs["twin"], runs["other_env"]}


def test_find_searches_tags_not_records(store, runs):
    """A run whose record matches but whose tag says otherwise is not found: the store did the
    matching on the tag, nothing scanned the records."""
    from mlflow import MlflowClient

    record = seeded(cpu_record(), 0)
    hidden = log_run(store, "find", "retagged", record, {"loss": [1.0]})
    MlflowClient(store).set_tag(hidden, layout.TAG_HASH, "0" * 16)
    assert hidden not in {m.run_id for m in find(runs["a"], tracking_uri=store).matches}


def test_find_cli_text_and_json(capsys, store, runs, tmp_path):
    code, out, _ = cli(capsys, "find", runs["a"], "--tracking-uri", store, "--format", "json")
    assert code == 0
    assert {m["run_name"] for m in json.loads(out)["matches"]} == {"twin", "elsewhere"}
    code, out, _ = cli(
        capsys,
        "find",
        write(tmp_path, "fp", seeded(cpu_record(), 0)),
        "--same",
        "env",
        "--tracking-uri",
        store,
    )
    assert code == 0
    assert " run(s) with fingerprint.hash.env = " in out.splitlines()[0]
    # one row a run, each led by its id (the head line may wrap: it names the record's path)
    rows = [line for line in out.splitlines() if re.match(r"[0-9a-f]{32} ", line)]
    assert int(out.split()[0]) == len(rows)
    assert "seed1" in out
    assert "elsewhere" in out
    assert "other_env" not in out
    code, _, err = cli(capsys, "find", runs["a"], "--max-results", "0", "--tracking-uri", store)
    assert code == 2
    assert "--max-results" in err


def test_audit_puts_the_worst_threat_first_with_a_fix():
    # unseeded by construction: gpu_record captures this process, which an earlier test in the
    # same worker may have seeded (torch's seed then reads as the program's own)
    record = edit(
        gpu_record("a100"),
        **{
            "seeds.requested": None,
            "seeds.seeded_by": None,
            "seeds.origin": "unseeded",
            "seeds.torch_initial_seed": 14087117469120101753,  # as torch draws it from the OS
            "determinism.cudnn_benchmark": True,
            "numerics.fp32_precision.cuda_matmul": "tf32",
            "torch.version": "2.8.0+cu128",
            "data.loaders": [{"num_workers": 4, "generator": {"present": False}}],
        },
    )
    result = audit(record)
    checks = [f.check for f in result.findings]
    assert checks[:4] == [
        "seeds",
        "dataloader_workers",
        "cudnn_benchmark",
        "deterministic_algorithms",
    ]
    assert {"cudnn_benchmark", "tf32", "cublas_workspace_config", "dataloader_workers"} <= set(
        checks
    )
    assert [f.severity for f in result.findings] == sorted(
        (f.severity for f in result.findings), key=["high", "medium", "low"].index
    )
    assert all(f.fix for f in result.findings)


def test_audit_of_a_careful_run_finds_little():
    record = edit(
        seeded(gpu_record("v100"), 0),
        **{
            "determinism.deterministic_algorithms": True,
            "torch.version": "2.11.0+cu128",
            "seeds.pythonhashseed": "0",
            "torch.threads.env.OMP_NUM_THREADS": "4",
            "git.dirty": False,
            "data.loaders": [{"num_workers": 2, "generator": {"present": True, "initial_seed": 0}}],
        },
    )
    assert audit(record).findings == ()


def test_audit_cli_on_this_environment_leaves_the_programs_choices_out(capsys):
    """Without a run, ``audit`` looks at this environment: the ``fingerprint`` process seeds
    nothing and loads no data, so seeds and DataLoaders are named as not checked, not reported
    (issue 29: it always said "no seed was set" about itself)."""
    code, out, _ = cli(capsys, "audit", "--format", "json")
    result = json.loads(out)
    assert code == 0
    checks = [f["check"] for f in result["findings"]] + [p.split(":")[0] for p in result["passed"]]
    assert "seeds" not in checks
    assert result["not_checked"] == ["seeds", "tf_seed", "worker_seeding"]
    assert any(p.startswith("tf32:") for p in result["passed"])  # no TF32-capable GPU here
    code, out, _ = cli(capsys, "audit")
    assert "No seed was set" not in out
    assert "fingerprint audit RUN checks a recorded run" in " ".join(out.split())  # wrapped


def test_audit_of_a_recorded_run(digits_runs, capsys):
    """``audit RUN`` reads the run's record from MLflow: an unseeded run is told so, a seeded
    one is not, and what its DataLoader did is checked."""
    uri = digits_runs.uri
    code, out, _ = cli(capsys, "audit", digits_runs["unseeded1"], "--tracking-uri", uri)
    assert code == 0
    assert out.startswith(f"{len(out.split('. [')) - 1} threat(s) to reproducibility in run ")
    assert "1. [high] No seed was set" in out
    code, out, _ = cli(
        capsys, "audit", "a", "-e", "pairs", "--tracking-uri", uri, "--format", "json"
    )
    result = json.loads(out)
    assert code == 0
    assert "seeds: seeded with 0" in result["passed"]
    assert "worker_seeding: no DataLoader recorded" not in result["passed"]
    assert result["not_checked"] == []
    code, _, err = cli(capsys, "audit", "0" * 32, "--tracking-uri", uri)
    assert code == 2
    assert err.startswith("fingerprint audit: error: no run with id")
