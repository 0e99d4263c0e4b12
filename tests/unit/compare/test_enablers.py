"""Settings both runs share that let one fingerprint give different numbers
(``compare/enablers.py``), on real captured records: an enabler holds in both runs or is none."""

from __future__ import annotations

from mlflow_fingerprint.compare.enablers import find_enablers
from support.records import cpu_record, edit, gpu_record, seeded


def fields(a: dict, b: dict) -> list[str]:
    return [e.field for e in find_enablers(a, b)]


def test_two_unseeded_runs_may_draw_anew_and_salt_their_string_hashes() -> None:
    found = find_enablers(cpu_record(), cpu_record())
    assert [e.field for e in found] == ["seeds.requested", "seeds.pythonhashseed"]
    assert found[0].explanation.startswith("Neither run was seeded")
    assert "seed_everything" in found[0].fix


def test_seeded_cpu_runs_with_a_fixed_hash_seed_allow_nothing() -> None:
    pinned = edit(seeded(cpu_record(), 0), **{"seeds.pythonhashseed": "0"})
    assert fields(pinned, pinned) == []
    assert fields(seeded(cpu_record(), 0), pinned) == []  # holds in one run only: a difference


def test_gpu_runs_allow_their_nondeterministic_kernels_and_tf32_and_benchmark_in_both() -> None:
    gpu = edit(seeded(gpu_record("a100"), 0), **{"seeds.pythonhashseed": "0"})
    assert fields(gpu, gpu) == ["determinism.deterministic_algorithms", "numerics.fp32_precision"]
    tuned = edit(gpu, **{"determinism.cudnn_benchmark": True})
    assert fields(tuned, tuned)[0] == "determinism.cudnn_benchmark"
    assert "determinism.cudnn_benchmark" not in fields(gpu, tuned)
