"""What rank 0 makes of a distributed job's fingerprints (``run/ranks.py``): each rank's summary,
what differs across ranks and the one sentence that says so, the job tags, the per-rank
artifacts, and where each rank's metric values go. Real records edited as other ranks' would be;
real jobs under ``torchrun`` are in ``tests/system/test_distributed.py``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from mlflow_fingerprint import layout
from mlflow_fingerprint.model.fingerprint import Fingerprint
from mlflow_fingerprint.run.ranks import (
    RankGroup,
    RankMetrics,
    distinct,
    heterogeneity_message,
    job_tags,
    launched_distributed,
    merge,
    metric_mode,
    rank_artifacts,
    rank_summary,
)
from support.records import cpu_capture, cpu_record, edit

SECRET = "hunter2-" + "x" * 12


def rank(i: int, **changes: Any) -> dict[str, Any]:
    return edit(
        cpu_capture(),  # a capture of this version: its hashes are what merge recomputes
        **{"distributed.rank": i, "distributed.world_size": 2, "distributed.backend": "gloo"},
        **changes,
    )


def test_a_rank_s_summary_holds_what_an_all_reduce_depends_on() -> None:
    record = rank(1, **{"gpu.devices": [{"name": "H100", "compute_capability": "9.0"}] * 2})
    summary = rank_summary(record)
    assert (summary["rank"], summary["backend"]) == (1, "gloo")
    assert (summary["gpu"], summary["compute_capability"]) == ("H100", "9.0")
    assert summary["torch"] == record["torch"]["version"]
    assert summary["hashes"]["numerics"] == record["hashes"]["numerics"]
    assert rank_summary(rank(0))["gpu"] == "none"  # no GPU recorded


def test_ranks_that_compute_differently_are_named_in_one_sentence() -> None:
    same = [rank_summary(rank(0)), rank_summary(rank(1))]
    assert distinct(same) == {"gpu_models": 1, "drivers": 1, "torch_versions": 1, "numerics": 1}
    assert heterogeneity_message(distinct(same), 2) is None
    other = rank_summary(rank(1, **{"torch.version": "2.0.0"}))
    counts = distinct([same[0], other])
    assert counts["torch_versions"] == 2
    assert heterogeneity_message(counts, 2) == (
        "mlflow-fingerprint: the 2 ranks of this job differ (2 torch versions); ranks that "
        "compute differently make the all-reduce, and so the run, irreproducible"
    )


def test_a_merged_job_carries_its_job_tags_and_its_hashes_do_not_move() -> None:
    fp = Fingerprint.from_dict(rank(0))
    assert job_tags(Fingerprint.from_dict(cpu_record())) == {}  # one process: none
    merged = merge(fp, [rank(0), rank(1, **{"torch.version": "2.0.0"})])
    assert merged.to_dict()["hashes"] == fp.to_dict()["hashes"]
    tags = job_tags(merged)
    assert tags[layout.TAG_WORLD_SIZE] == "2"
    assert tags[layout.TAG_DISTRIBUTED_BACKEND] == "gloo"
    assert tags[layout.distinct_tag("torch_versions")] == "2"
    assert tags[layout.TAG_DISTRIBUTED_HETEROGENEOUS] == "true"


def test_every_rank_s_fingerprint_is_an_artifact_named_by_its_rank_redacted() -> None:
    records = [rank(0), rank(1, **{"distributed.hostname": SECRET})]
    artifacts = rank_artifacts(records, {SECRET})
    assert [e.file for e, _ in artifacts] == [
        f"{layout.RANKS_DIR}/{layout.rank_file(0)}",
        f"{layout.RANKS_DIR}/{layout.rank_file(1)}",
    ]
    text = artifacts[1][1]().decode()  # type: ignore[misc]
    assert SECRET not in text
    assert json.loads(text)["distributed"]["rank"] == 1


def test_a_job_is_distributed_only_with_torchrun_s_variables_and_several_ranks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in {"RANK": "0", "MASTER_ADDR": "127.0.0.1", "WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(name, value)
    assert launched_distributed()
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert not launched_distributed()
    monkeypatch.setenv("WORLD_SIZE", "two")
    assert not launched_distributed()
    monkeypatch.delenv("MASTER_ADDR")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert not launched_distributed()


def test_a_metrics_mode_is_one_of_three() -> None:
    assert metric_mode("per_rank") == "per_rank"
    with pytest.raises(ValueError, match="metrics must be one of rank0, per_rank, mean"):
        metric_mode("sum")


@dataclass
class Writer:
    run_id: str | None = "r0"
    logged: list[tuple[dict[str, Any], int | None]] = field(default_factory=list)

    def log_metrics(self, values: Mapping[str, Any], step: int | None = None) -> None:
        self.logged.append((dict(values), step))


def test_rank_0_logs_its_values_and_other_ranks_only_per_rank() -> None:
    def on(i: int, mode: str) -> Writer:
        writer = Writer()
        metrics = RankMetrics(RankGroup(None, i, 2, None), metric_mode(mode), writer)
        metrics.log_metrics({"loss": 1.5}, 3)
        return writer

    assert on(0, "rank0").logged == [({"loss": 1.5}, 3)]
    assert on(1, "rank0").logged == []
    assert on(1, "per_rank").logged == [({"loss/rank1": 1.5}, 3)]
    assert RankMetrics(RankGroup(None, 1, 2, None), "rank0", None).run_id is None
