"""TF32 and determinism flags toggled for real on torch, read back through capture()."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint.capture import numerics
from mlflow_fingerprint.capture.context import ProbeContext, RunInfo
from mlflow_fingerprint.capture.numerics import normalise_precision

torch = pytest.importorskip("torch", reason="torch is part of the CI install; needed for flags")

NODES = ("cuda.matmul", "cudnn.conv", "cudnn.rnn", "mkldnn.matmul", "mkldnn.conv", "mkldnn.rnn")


def _node(path: str):
    obj = torch.backends
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.fixture
def flags() -> Iterator[None]:
    """Put every flag this module touches back to what it was, via the new API only (mixing the
    legacy API back in would leave torch in the 'mixed' state that makes reads raise)."""
    saved = {n: _node(n).fp32_precision for n in NODES}
    saved_generic = torch.backends.fp32_precision
    benchmark, deterministic = torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic
    algorithms = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    yield
    torch.backends.fp32_precision = saved_generic
    for n, value in saved.items():
        _node(n).fp32_precision = value
    torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = benchmark, deterministic
    torch.use_deterministic_algorithms(algorithms, warn_only=warn_only)


def hashes() -> dict[str, str]:
    return dict(mfp.capture().hashes)


def only_numerics_changed(before: dict[str, str], after: dict[str, str]) -> bool:
    return (
        before["numerics"] != after["numerics"]
        and before["env"] == after["env"]
        and before["recipe"] == after["recipe"]
        and before["fingerprint"] != after["fingerprint"]
    )


def test_two_captures_in_one_process_hash_equal() -> None:
    first, second = mfp.capture(), mfp.capture()
    assert dict(first.hashes) == dict(second.hashes)
    assert set(first.hashes) == {"env", "numerics", "recipe", "fingerprint", "replicate"}


@pytest.mark.usefixtures("flags")
def test_legacy_allow_tf32_changes_numerics_hash_only() -> None:
    before = hashes()
    torch.backends.cuda.matmul.allow_tf32 = True
    after = hashes()
    assert only_numerics_changed(before, after)
    assert mfp.capture().get("numerics.fp32_precision.cuda_matmul") == "tf32"


@pytest.mark.usefixtures("flags")
def test_new_fp32_precision_api_changes_numerics_hash_only() -> None:
    before = hashes()
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    after = hashes()
    assert only_numerics_changed(before, after)


@pytest.mark.usefixtures("flags")
def test_legacy_and_new_spellings_of_tf32_hash_equal() -> None:
    torch.backends.cuda.matmul.allow_tf32 = True
    legacy = hashes()["numerics"]
    torch.backends.cuda.matmul.fp32_precision = "none"
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    new = hashes()["numerics"]
    assert legacy == new


@pytest.mark.usefixtures("flags")
@pytest.mark.parametrize("spelling", ["highest", "ieee", "allow_tf32_false"])
def test_ieee_spellings_equal_the_untouched_default(spelling: str) -> None:
    default = hashes()["numerics"]
    if spelling == "highest":
        torch.set_float32_matmul_precision("highest")
    elif spelling == "ieee":
        torch.backends.cuda.matmul.fp32_precision = "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = False
    raw = mfp.capture().get("numerics.raw.cuda_matmul_fp32_precision")
    assert hashes()["numerics"] == default, f"raw read {raw!r} should normalise to the default"


@pytest.mark.usefixtures("flags")
def test_mixed_api_reads_that_raise_are_recorded_not_raised() -> None:
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    with pytest.raises(RuntimeError):
        torch.get_float32_matmul_precision()  # torch itself refuses this read now
    fp = mfp.capture()
    raw = fp.get("numerics.raw.float32_matmul_precision")
    assert set(raw) == {"unavailable"}
    assert "RuntimeError" in raw["unavailable"]
    assert fp.get("numerics.fp32_precision.cuda_matmul") == "tf32"


@pytest.mark.usefixtures("flags")
def test_medium_precision_maps_to_tf32_on_cuda_and_bf16_on_onednn() -> None:
    torch.set_float32_matmul_precision("medium")
    fp = mfp.capture()
    assert fp.get("numerics.fp32_precision.cuda_matmul") == "tf32"
    assert fp.get("numerics.fp32_precision.mkldnn_matmul") == "bf16"


@pytest.mark.usefixtures("flags")
def test_determinism_flags_are_read_back_and_change_numerics_hash() -> None:
    before = hashes()
    torch.backends.cudnn.benchmark = True
    torch.use_deterministic_algorithms(True, warn_only=True)
    fp = mfp.capture()
    assert fp.get("determinism.cudnn_benchmark") is True
    assert fp.get("determinism.deterministic_algorithms") is True
    assert fp.get("determinism.warn_only") is True
    assert only_numerics_changed(before, dict(fp.hashes))


@pytest.mark.usefixtures("flags")
def test_thread_count_is_numerics_not_env() -> None:
    threads = torch.get_num_threads()
    before = hashes()
    torch.set_num_threads(1 if threads != 1 else 2)
    try:
        after = hashes()
    finally:
        torch.set_num_threads(threads)
    assert only_numerics_changed(before, after)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, "tf32"),
        (False, "ieee"),
        (None, "ieee"),
        ("none", "ieee"),
        ("highest", "ieee"),
        ("high", "tf32"),
        ("medium", "tf32"),
        ("TF32", "tf32"),
        ("bf16", "bf16"),
    ],
)
def test_normalise_precision(value: object, expected: str) -> None:
    assert normalise_precision(value) == expected


def test_capture_never_initialises_cuda() -> None:
    mfp.capture()
    assert torch.cuda.is_initialized() is False


def test_numerics_variables_are_kept_where_torch_is_not_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A TensorFlow program's capture leaves torch unread, but NVIDIA_TF32_OVERRIDE still
    switches TF32 off in the cuBLAS and cuDNN TensorFlow calls: the variables stay recorded."""
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    why = "not read: the program imported tensorflow, not torch"
    ctx = ProbeContext(
        torch=None,
        torch_error=why,
        nvml=None,
        nvml_error="no NVML",
        nvml_source="none",
        cwd=Path.cwd(),
        run=RunInfo(),
    )
    section = numerics.probe(ctx)
    assert section["env"]["NVIDIA_TF32_OVERRIDE"] == "0"
    assert section["torch"] == {"unavailable": why}
