"""Record fields in words, as the summary and the ``fingerprint.*`` tags show them."""

from __future__ import annotations

from mlflow_fingerprint.model.readable import (
    git_text,
    gpu_summary,
    loaders_value,
    seed_text,
    tf32_text,
    value_text,
)
from mlflow_fingerprint.model.record import unavailable
from support.records import cpu_record

H100 = {"name": "NVIDIA H100", "architecture": "Hopper", "compute_capability": "9.0"}


def test_gpu_summary_counts_models_and_marks_mig() -> None:
    section = {"devices": [H100, H100, {**H100, "mig_mode": "enabled"}]}
    assert gpu_summary(section) == (
        "NVIDIA H100 x2 (Hopper, sm_90) + NVIDIA H100 x1 (Hopper, sm_90, MIG)"
    )
    assert gpu_summary(unavailable("no driver")) == "none"
    assert gpu_summary({"devices": []}) == "none"
    assert gpu_summary({"devices": [7]}) == "unknown GPU x1"


def test_value_text() -> None:
    assert [value_text(v) for v in (True, False, None, 3)] == ["on", "off", "—", "3"]
    assert value_text(unavailable("x")) == "unavailable"


def test_tf32_text_reads_partial_and_the_override() -> None:
    record = {
        "numerics": {
            "fp32_precision": {"cuda_matmul": "tf32", "cudnn_conv": "tf32", "cudnn_rnn": "ieee"},
            "env": {"NVIDIA_TF32_OVERRIDE": "0"},
        }
    }
    assert tf32_text(record) == "matmul=on,cudnn=partial,NVIDIA_TF32_OVERRIDE=0"
    assert tf32_text({"numerics": unavailable("x")}) == "unavailable"


def test_seed_text() -> None:
    assert seed_text({"seeds": {"requested": 42}}) == "42"
    assert seed_text({"seeds": {"torch_initial_seed": 5}}) == "unseeded (torch initial seed 5)"
    assert seed_text({}) == "unseeded"


def test_loaders_value_prefers_the_loader_with_most_batches() -> None:
    record = {
        "data": {
            "loaders": [
                {"batch_size": 8, "batches_seen": 2},
                {"batch_size": 32, "batches_seen": 10},
            ],
            "declared": {"batch_size": 64},
        }
    }
    assert loaders_value(record, "batch_size") == "32"
    declared_only = {"data": {"loaders": [], "declared": {"batch_size": 64}}}
    assert loaders_value(declared_only, "batch_size") == "64"
    assert loaders_value({}, "batch_size") == "unknown"


def test_git_text_of_a_real_capture() -> None:
    assert git_text(cpu_record()) == "5712857c13 · on main · dirty (1 changed)"
    assert git_text({}) == "—"
