"""``mfp.watch`` under a real ``torchrun`` job (2 ranks, gloo on CPU, the digits CNN wrapped in
DistributedDataParallel): the run holds rank 0's records under the inner model's paths; other
ranks install nothing, unless ``metrics="per_rank"``, where each keeps its own records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mlflow_fingerprint import layout
from mlflow_fingerprint.model.watched import TensorRecord, decode
from support.paths import JOBS
from support.torchrun import torchrun

MODEL_INPUT = (0, "forward", "", "input", 0)  # step 0: the batch the rank's model was given


def job(uri: str, metrics: str, out: Path) -> list[dict[str, Any]]:
    """``tests/jobs/ddp_watch.py`` on 2 ranks; each rank's report, in rank order."""
    out.mkdir()
    torchrun(
        JOBS / "ddp_watch.py",
        *("--tracking-uri", uri, "--experiment", f"watch-ddp-{metrics}"),
        *("--metrics", metrics, "--out", str(out)),
    )
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in range(2)]


def records(client: Any, run_id: str, artifact: str, folder: Path) -> tuple[TensorRecord, ...]:
    folder.mkdir(exist_ok=True)
    return decode(Path(client.download_artifacts(run_id, artifact, str(folder))).read_bytes())


def test_rank_0s_view_is_the_runs_and_per_rank_keeps_every_ranks(
    mlflow_server: str, tmp_path: Path
) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(mlflow_server)

    # metrics="rank0": rank 1 watches nothing, installs nothing, writes nothing
    lead, other = job(mlflow_server, "rank0", tmp_path / "rank0")
    assert other == {"rank": 1, "hooks": 0, "optimizer_hooks": 0, "closed": True, "run_id": None}
    assert lead["hooks"] > 0
    assert lead["optimizer_hooks"] == 1
    run_id = lead["run_id"]
    files = {a.path for a in client.list_artifacts(run_id, layout.NUMERICS_DIR)}
    assert files == {layout.STEPS_ARTIFACT}
    found = records(client, run_id, layout.STEPS_ARTIFACT, tmp_path / "a")
    assert {r.step for r in found} == {0, 2}
    assert {r.phase for r in found} == {"forward", "backward", "optimizer"}
    # the paths are the wrapped model's own: the same as a run without DDP
    modules = {(r.module, r.kind) for r in found}
    assert {("", "DigitsCNN"), ("features.0", "Conv2d"), ("classifier.4", "Linear")} <= modules
    assert not any(r.module.startswith("module") for r in found)

    # metrics="per_rank": rank 1's records reach rank 0's run beside rank 0's
    lead, other = job(mlflow_server, "per_rank", tmp_path / "per_rank")
    assert other["hooks"] == lead["hooks"] > 0
    run_id = lead["run_id"]
    files = {a.path for a in client.list_artifacts(run_id, layout.NUMERICS_DIR)}
    assert files == {layout.STEPS_ARTIFACT, layout.steps_artifact(1)}
    rank0 = records(client, run_id, layout.STEPS_ARTIFACT, tmp_path / "b0")
    rank1 = records(client, run_id, layout.steps_artifact(1), tmp_path / "b1")
    assert [r.key for r in rank0] == [r.key for r in rank1]
    by_key = {r.key: r for r in rank1}
    # each rank trained on its own shard: another batch, other gradients of its own backward
    assert not next(r for r in rank0 if r.key == MODEL_INPUT).same_tensor(by_key[MODEL_INPUT])
    grads = [r for r in rank0 if r.phase == "backward"]
    assert grads
    assert not any(r.same_tensor(by_key[r.key]) for r in grads)
    # and DDP kept the replicas equal: every parameter after each update is the same bits
    updates = [r for r in rank0 if r.phase == "optimizer"]
    assert updates
    assert all(r.same_tensor(by_key[r.key]) for r in updates)
