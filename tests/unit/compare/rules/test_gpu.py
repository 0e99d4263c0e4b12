"""GPU scenarios, from fingerprints captured through replays of recorded real GPUs."""

from __future__ import annotations

import pytest

from mlflow_fingerprint import diff
from support.records import cpu_record, edit, gpu_record, log_run, new_store, seeded

TF32_ON = {
    "numerics.fp32_precision.cuda_matmul": "tf32",
    "numerics.fp32_precision.cudnn_conv": "tf32",
}
TF32_OFF = {
    "numerics.fp32_precision.cuda_matmul": "ieee",
    "numerics.fp32_precision.cudnn_conv": "ieee",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory, mlflow_db_template):
    return new_store(tmp_path_factory.mktemp("gpu-store"), mlflow_db_template)


def fields(report):
    return {d.field: d for d in report.effective_differences}


def test_a100_with_tf32_against_v100_names_the_architecture_first():
    a100 = edit(seeded(gpu_record("a100"), 0), **TF32_ON)
    v100 = edit(seeded(gpu_record("v100"), 0), **TF32_ON)
    report = diff(a100, v100)
    top = report.differences[0]
    assert top.effect == "numerics"
    assert top.field.startswith("gpu.devices.0.")
    assert top.field.split(".")[-1] in {"architecture", "compute_capability", "sm_count", "name"}
    assert fields(report)["gpu.devices.0.architecture"].a == "Ampere"


def test_tf32_on_versus_off_two_volta_gpus_is_none_two_ampere_is_numerics():
    for gpu, expected in (("v100", "none"), ("a100", "numerics")):
        off = edit(seeded(gpu_record(gpu), 0), **TF32_OFF)
        found = {d.field: d.effect for d in diff(off, edit(off, **TF32_ON)).differences}
        assert found["numerics.fp32_precision.cuda_matmul"] == expected, gpu
        assert found["numerics.fp32_precision.cudnn_conv"] == expected, gpu


def test_tf32_requested_on_volta_against_ieee_on_ampere_is_not_a_precision_difference():
    v100_on = edit(seeded(gpu_record("v100"), 0), **TF32_ON)
    a100_off = edit(seeded(gpu_record("a100"), 0), **TF32_OFF)
    report = diff(v100_on, a100_off)
    found = {d.field: d for d in report.differences}
    assert found["numerics.fp32_precision.cuda_matmul"].effect == "none"
    assert "both computed in ieee" in found["numerics.fp32_precision.cuda_matmul"].explanation
    assert report.differences[0].field.startswith("gpu.devices.0.")
    # ...but TF32 that really ran on the Ampere side is a precision difference.
    v100_off = edit(seeded(gpu_record("v100"), 0), **TF32_OFF)
    a100_on = edit(seeded(gpu_record("a100"), 0), **TF32_ON)
    found = {d.field: d.effect for d in diff(v100_off, a100_on).differences}
    assert found["numerics.fp32_precision.cuda_matmul"] == "numerics"


def test_h100_against_h200_is_a_weak_numerics_cause_with_memory_hidden():
    h100, h200 = seeded(gpu_record("h100"), 0), seeded(gpu_record("h200"), 0)
    report = diff(h100, h200)
    shown = fields(report)
    assert shown["gpu.devices.0.name"].effect == "numerics"
    assert "same architecture and SM count" in shown["gpu.devices.0.name"].explanation
    assert "gpu.devices.0.sm_count" not in shown  # both 132
    hidden = {d.field: d.effect for d in report.differences}
    assert hidden["gpu.devices.0.memory_total_mib"] == "none"
    assert report.exit_code == 1


def test_mig_slice_against_whole_gpu_is_numerics():
    whole, mig = seeded(gpu_record("a100"), 0), seeded(gpu_record("a100_mig"), 0)
    report = diff(whole, mig)
    assert fields(report)["gpu.devices.0.mig_mode"].effect == "numerics"


def test_cudnn_upgrade_outranks_driver_upgrade():
    base = seeded(gpu_record("a100"), 0)
    upgraded = edit(base, **{"cuda.cudnn_version": "9.10.2", "gpu.driver_version": "570.86.15"})
    ranked = [d.field for d in diff(base, upgraded).effective_differences]
    assert ranked == ["cuda.cudnn_version", "gpu.driver_version"]


def test_driver_upgrade_alone_is_low_prior_numerics():
    base = seeded(gpu_record("l4"), 0)
    report = diff(base, edit(base, **{"gpu.driver_version": "570.86.15"}))
    (only,) = report.effective_differences
    assert (only.field, only.effect) == ("gpu.driver_version", "numerics")
    assert "rarely" in only.explanation


def test_same_gpu_fingerprints_with_benchmark_on_and_differing_metrics_are_nondeterministic(store):
    record = edit(seeded(gpu_record("a100"), 0), **{"determinism.cudnn_benchmark": True})
    a = log_run(store, "gpu", "bench-a", record, {"loss": [1.0, 0.5, 0.25]})
    b = log_run(store, "gpu", "bench-b", record, {"loss": [1.0, 0.5, 0.2500001]})
    report = diff(a, b, tracking_uri=store)
    assert report.verdict == "nondeterministic"
    assert {e.field for e in report.enablers} >= {
        "determinism.cudnn_benchmark",
        "determinism.deterministic_algorithms",
    }
    assert report.metrics[0].first_divergence_step == 2
    assert report.exit_code == 1


def test_same_deterministic_fingerprints_with_differing_metrics_are_unexplained(store):
    record = edit(
        seeded(gpu_record("v100"), 0),
        **{
            "determinism.deterministic_algorithms": True,
            "seeds.pythonhashseed": "0",  # string hashes unsalted: set order is fixed too
            "seeds.hash_randomization": False,
        },
    )
    a = log_run(store, "gpu", "det-a", record, {"loss": [1.0, 0.5]})
    b = log_run(store, "gpu", "det-b", record, {"loss": [1.0, 0.6]})
    report = diff(a, b, tracking_uri=store)
    assert report.enablers == ()
    assert report.verdict == "unexplained"


def test_cpu_against_gpu_training_on_one_gpu_machine_names_the_device_first():
    """The same script trained on the CPU and on the GPU of one A100 machine. Nothing
    about the machine differs; where each run computed is the cause, and a TF32 flag (which only
    GPU matmuls obey) counts only on the side that computed on the GPU."""
    gpu = edit(seeded(gpu_record("a100"), 0), **TF32_OFF)
    cpu = edit(gpu, **{"cuda.computed_on": "cpu", **TF32_ON})
    report = diff(gpu, cpu)
    top = report.differences[0]
    assert (top.field, top.a, top.b, top.effect) == ("cuda.computed_on", "cuda", "cpu", "numerics")
    assert "CPU vs GPU device" in top.source
    assert not [f for f in fields(report) if f.startswith("gpu.")]
    # B's TF32 flag never reached a GPU matmul: both sides computed in IEEE fp32.
    by_field = {d.field: d for d in report.differences}
    assert by_field["numerics.fp32_precision.cuda_matmul"].effect == "none"
    # The other way round, A's TF32 matmuls really ran on the Ampere GPU.
    tf32_gpu = edit(gpu, **TF32_ON)
    cpu_off = edit(gpu, **{"cuda.computed_on": "cpu"})
    found = fields(diff(tf32_gpu, cpu_off))
    assert found["numerics.fp32_precision.cuda_matmul"].effect == "numerics"


def test_a_run_captured_before_it_used_cuda_says_nothing_about_its_device():
    """A bare mlflow.start_run() is captured at its start, before the model moved: unknown."""
    start = edit(seeded(gpu_record("h100"), 0), **{"cuda.computed_on": {"unavailable": "start"}})
    report = diff(start, seeded(gpu_record("h100"), 0))
    device = {d.field: d for d in report.differences}["cuda.computed_on"]
    assert device.effect == "none"
    assert "run A computed is not known" in device.explanation
    assert report.effective_differences == ()


def test_a_power_capped_gpu_is_a_none_difference_that_changes_the_env_hash():
    full = edit(seeded(gpu_record("h100"), 0), **{"gpu.devices.0.power_limit_w": 700})
    capped = edit(full, **{"gpu.devices.0.power_limit_w": 400})
    report = diff(full, capped)
    (only,) = report.differences
    assert (only.field, only.a, only.b, only.effect) == (
        "gpu.devices.0.power_limit_w",
        700,
        400,
        "none",
    )
    assert "speed, not arithmetic" in only.explanation
    assert not report.effective_differences
    assert full["hashes"]["env"] != capped["hashes"]["env"]
    assert full["hashes"]["numerics"] == capped["hashes"]["numerics"]
    # A record from before the field (the replay has no reading: unavailable) against one with it.
    old = seeded(gpu_record("h100"), 0)
    found = {d.field: d.effect for d in diff(old, full).differences}
    assert found == {"gpu.devices.0.power_limit_w": "none"}


def test_a_blas_library_switch_is_numerics_on_a_gpu_run_and_nothing_on_the_cpu():
    """torch's preferred BLAS library picks the GEMM kernels of every CUDA matmul: between two
    GPU runs a switch from cuBLAS to cuBLASLt is a numerics cause (pytorch/torchtitan#2474); where
    both runs computed on the CPU it changes nothing."""
    gpu = edit(seeded(gpu_record("h100"), 0), **{"numerics.blas_library": "cublas"})
    report = diff(gpu, edit(gpu, **{"numerics.blas_library": "cublaslt"}))
    (only,) = report.effective_differences
    assert (only.field, only.a, only.b, only.effect) == (
        "numerics.blas_library",
        "cublas",
        "cublaslt",
        "numerics",
    )
    assert "GEMM kernels" in only.explanation
    assert only.source.startswith("https://github.com/pytorch/torchtitan/issues/2474; ")
    assert only.source.endswith(
        "determinism.md: Preferred BLAS library (`torch.backends.cuda.preferred_blas_library`, "
        "TORCH_BLAS_PREFER_CUBLASLT)"
    )
    cpu = edit(seeded(cpu_record(), 0), **{"numerics.blas_library": "cublas"})
    on_cpu = diff(cpu, edit(cpu, **{"numerics.blas_library": "cublaslt"}))
    assert on_cpu.effective_differences == ()
    (hidden,) = on_cpu.differences
    assert (hidden.field, hidden.effect) == ("numerics.blas_library", "none")
