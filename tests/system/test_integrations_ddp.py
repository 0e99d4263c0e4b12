"""The Lightning and Hugging Face callbacks in real 2-rank DDP jobs (``torchrun``, gloo, CPU)
logging into a real ``mlflow server``: one run per job, holding every rank's fingerprint, and a
job whose ranks differ is flagged. The job scripts are tests/lightning_ddp_job.py and
tests/hf_ddp_job.py; each rank writes what its callback saw to a JSON file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from mlflow_fingerprint import layout
from support.mlflow_team import MlflowServer
from support.paths import JOBS
from support.tracking import _ISOLATE

# Two ranks importing torch, mlflow and the trainer on a small shared machine take ~20 s.
TORCHRUN_TIMEOUT_S = 240
# The side group's timeout in the Lightning job: how long rank 0 waits for a rank that never
# joins the gather (the ranks reach the hook together: DDP's set-up is a collective just before).
GATHER_TIMEOUT_S = "8"


def _torchrun(script: str, *args: str, uri: str, folder: Path, **env: str) -> None:
    """Run ``script`` on 2 ranks; on a timeout kill the whole job (torchrun and its ranks)."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--standalone"]
    isolated = {k: v for k, v in os.environ.items() if k not in _ISOLATE}
    proc = subprocess.Popen(
        [*cmd, str(JOBS / script), *args],
        env={
            **isolated,
            "MLFLOW_TRACKING_URI": uri,
            "MLFLOW_FINGERPRINT_SPOOL": str(folder / "spool"),
            "OMP_NUM_THREADS": "1",
            **env,
        },
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=TORCHRUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"{script} ran past {TORCHRUN_TIMEOUT_S} s:\n{output[-4000:]}")
    print(output[-8000:])  # shown by pytest if a later assertion fails
    assert proc.returncode == 0, output[-4000:]


def _seen(folder: Path, prefix: str = "") -> list[dict[str, Any]]:
    """What each rank's callback saw, in rank order."""
    return [json.loads((folder / f"{prefix}rank-{r}.json").read_text()) for r in range(2)]


def _only_run(client: MlflowClient, experiment: str) -> Any:
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    assert len(runs) == 1, [r.info.run_id for r in runs]  # rank 1 opened none
    return runs[0]


def _assert_one_run_holds_both_ranks(
    client: MlflowClient, run: Any, seen: list[dict[str, Any]], integration: str, tmp: Path
) -> None:
    assert seen[0]["run_id"] == run.info.run_id
    assert seen[1]["run_id"] is None  # a non-zero rank never touches MLflow
    assert run.data.tags[layout.TAG_WORLD_SIZE] == "2"
    assert run.data.tags[layout.TAG_DISTRIBUTED_BACKEND] == "gloo"
    assert run.data.tags[layout.TAG_INTEGRATION] == integration
    files = {a.path for a in client.list_artifacts(run.info.run_id, layout.RANKS_DIR)}
    assert files == {layout.rank_artifact(0), layout.rank_artifact(1)}
    folder = client.download_artifacts(run.info.run_id, layout.ARTIFACT_DIR, str(tmp))
    record = json.loads((Path(folder) / layout.FINGERPRINT_FILE).read_text())
    assert [r["rank"] for r in record["distributed"]["ranks"]] == [0, 1]
    assert record["hashes"]["fingerprint"] == run.data.tags[layout.TAG_HASH]
    rank1 = json.loads((Path(folder) / "ranks" / "rank-1.json").read_text())
    assert rank1["distributed"]["rank"] == 1


@pytest.fixture(scope="module")
def lightning_job(
    mlflow_server_process: MlflowServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    """One torchrun job of three Lightning DDP fits: ``pl-ddp`` (the ranks alike),
    ``pl-ddp-hetero`` (rank 1 deterministic), ``pl-ddp-skip`` (rank 1 without the callback); the
    server's URI and the folder of the ranks' reports."""
    if not mlflow_server_process.running:
        mlflow_server_process.start()
    uri = mlflow_server_process.url
    folder = tmp_path_factory.mktemp("pl-ddp")
    _torchrun(
        "lightning_ddp_job.py",
        *("--tracking-uri", uri, "--out", str(folder)),
        *("--experiment", "pl-ddp", "--experiment", "pl-ddp-hetero", "--hetero", "pl-ddp-hetero"),
        *("--experiment", "pl-ddp-skip", "--rank1-skips", "pl-ddp-skip"),
        uri=uri,
        folder=folder,
        MLFLOW_FINGERPRINT_GATHER_TIMEOUT=GATHER_TIMEOUT_S,
    )
    return uri, folder


def test_lightning_ddp_fit_is_one_run_holding_both_ranks(
    lightning_job: tuple[str, Path], tmp_path: Path
) -> None:
    uri, folder = lightning_job
    client = MlflowClient(uri)
    run = _only_run(client, "pl-ddp")
    seen = _seen(folder, "pl-ddp-")
    _assert_one_run_holds_both_ranks(client, run, seen, "lightning", tmp_path)
    assert run.data.tags[layout.TAG_DISTRIBUTED_HETEROGENEOUS] == "false"
    assert seen[0]["ranks"] == 2
    assert "HeterogeneousJobWarning" not in seen[0]["warnings"]


def test_lightning_ddp_fit_whose_ranks_differ_warns_and_is_tagged(
    lightning_job: tuple[str, Path],
) -> None:
    uri, folder = lightning_job
    run = _only_run(MlflowClient(uri), "pl-ddp-hetero")
    seen = _seen(folder, "pl-ddp-hetero-")
    assert "HeterogeneousJobWarning" in seen[0]["warnings"]
    assert "HeterogeneousJobWarning" not in seen[1]["warnings"]  # rank 0 speaks for the job
    assert run.data.tags[layout.TAG_DISTRIBUTED_HETEROGENEOUS] == "true"
    assert run.data.tags[layout.distinct_tag("numerics")] == "2"


def test_a_rank_missing_from_the_gather_costs_a_warning_not_the_fit(
    lightning_job: tuple[str, Path],
) -> None:
    uri, folder = lightning_job
    run = _only_run(MlflowClient(uri), "pl-ddp-skip")
    seen = _seen(folder, "pl-ddp-skip-")
    assert [s["steps"] for s in seen] == [2, 2]  # both ranks trained to the end
    assert any("could not gather" in m for m in seen[0]["ours"]), seen[0]["ours"]
    assert seen[0]["run_id"] == run.info.run_id  # rank 0 recorded its own fingerprint
    assert run.data.tags[layout.TAG_WORLD_SIZE] == "2"
    assert layout.TAG_DISTRIBUTED_HETEROGENEOUS not in run.data.tags  # nothing was merged
    assert MlflowClient(uri).list_artifacts(run.info.run_id, layout.RANKS_DIR) == []


def test_transformers_ddp_trainer_is_one_run_holding_both_ranks(
    mlflow_server: str, tmp_path: Path
) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    _torchrun(
        "hf_ddp_job.py",
        *("--out", str(folder)),
        uri=mlflow_server,
        folder=folder,
        MLFLOW_EXPERIMENT_NAME="hf-ddp",
        HF_HUB_OFFLINE="1",
    )
    client = MlflowClient(mlflow_server)
    run = _only_run(client, "hf-ddp")
    seen = _seen(folder)
    assert [s["world_size"] for s in seen] == [2, 2]
    _assert_one_run_holds_both_ranks(client, run, seen, "transformers", tmp_path)
    assert run.data.tags[layout.TAG_DISTRIBUTED_HETEROGENEOUS] == "false"
    assert run.data.tags[layout.TAG_BATCH_SIZE] == "4"
    assert seen[0]["ranks"] == 2
