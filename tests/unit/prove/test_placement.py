"""Machine kinds and placement on a cluster (issue 48): the kind a record shows, read from the
GPU probe's own output on the NVML recordings the tests replay; which reruns a cluster offering
some kinds can place; what a remote job is sent of this process's environment; the --executor
spellings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mlflow_fingerprint.capture import gpu
from mlflow_fingerprint.capture.context import ProbeContext, RunInfo
from mlflow_fingerprint.capture.nvml import load_nvml
from mlflow_fingerprint.capture.nvml_replay import NvmlReplay
from mlflow_fingerprint.compare.report import Difference
from mlflow_fingerprint.compare.settable import Knob, Split
from mlflow_fingerprint.errors import UsageError
from mlflow_fingerprint.prove.executors import ExecutorSpec, executor_for
from mlflow_fingerprint.prove.executors.remote import relative_command, sent_env
from mlflow_fingerprint.prove.launch import Job, Plan
from mlflow_fingerprint.prove.placement import (
    KIND_FIELD,
    MachineKind,
    NoNode,
    kind_of,
    placement,
)
from mlflow_fingerprint.prove.process import LocalProcess
from support.paths import FIXTURES


def record_on(recording: str | None) -> dict[str, Any]:
    """A record's GPU section as the probe writes it on the machine a recording was made on."""
    if recording is None:
        return {"gpu": {"unavailable": "no NVIDIA driver"}}
    module, error, source = load_nvml(NvmlReplay.from_file(FIXTURES / "gpus" / recording))
    ctx = ProbeContext(None, "absent", module, error, source, Path.cwd(), RunInfo())
    return {"gpu": gpu.probe(ctx)}


def test_a_kind_names_the_gpu_model_count_driver_and_cuda() -> None:
    h100 = kind_of(record_on("h100.json"))
    assert h100 == MachineKind("gpu", ("NVIDIA H100 80GB HBM3",), "580.159.04", "13.0")
    assert h100.name == "mfp_gpu_NVIDIA_H100_80GB_HBM3_x1_driver_580_159_04_cuda_13_0"
    assert h100.label() == "1x NVIDIA H100 80GB HBM3, driver 580.159.04, CUDA 13.0"
    assert kind_of(record_on("l4.json")).name.startswith("mfp_gpu_NVIDIA_L4_x1_driver_550")
    assert kind_of(record_on(None)) == MachineKind("cpu")
    assert kind_of(record_on(None)).name == "mfp_cpu"


def hardware_split() -> Split:
    d = Difference("gpu.devices.0.name", "a", "b", "numerics", "", "rule", 1)
    other = Difference("torch.version", "2.12", "2.13", "numerics", "", "rule", 2)
    return Split(
        (Knob("option", "note", "program.options.note", None, "x", "none"),), (d, other), ()
    )


def test_bs_kind_offered_becomes_one_knob_and_leaves_what_it_does_not_cover() -> None:
    a, b = record_on(None), record_on("h100.json")
    placed = placement(a, b, hardware_split(), ("mfp_cpu", kind_of(b).name))
    assert placed.home == "mfp_cpu"
    machine = [k for k in placed.sides.knobs if k.kind == "machine"]
    assert [(k.key, k.field) for k in machine] == [(kind_of(b).name, KIND_FIELD)]
    assert [d.field for d in placed.sides.cannot_set] == ["torch.version"]
    assert Plan.of(machine).place == kind_of(b).name


def test_a_gpu_the_training_did_not_compute_on_still_makes_the_kind_a_knob() -> None:
    """Computed on the CPU of GPU nodes: the rules see the GPU models as no effect, but the
    nodes differ in what no record holds; the kind is a knob of effect numerics, once."""
    unused = Difference("gpu.devices.0.name", "a", "b", "none", "", "rule", 1)
    sides = Split((), (), (unused,))
    a, b = record_on("a100.json"), record_on("h100.json")
    placed = placement(a, b, sides, (kind_of(a).name, kind_of(b).name))
    assert [(k.field, k.effect) for k in placed.sides.knobs] == [(KIND_FIELD, "numerics")]
    assert placed.sides.no_effect == ()
    alone = placement(a, b, sides, (kind_of(a).name,))
    assert [(d.field, d.effect) for d in alone.sides.cannot_set] == [(KIND_FIELD, "numerics")]


def test_bs_kind_not_offered_is_cannot_set_with_the_missing_node() -> None:
    a, b = record_on(None), record_on("h100.json")
    placed = placement(a, b, hardware_split(), ("mfp_cpu",))
    assert [k.kind for k in placed.sides.knobs] == ["option"]
    assert KIND_FIELD in [d.field for d in placed.sides.cannot_set]
    assert placed.notes == (
        f"{KIND_FIELD}: no node of kind {kind_of(b).name} "
        "(1x NVIDIA H100 80GB HBM3, driver 580.159.04, CUDA 13.0), B's",
    )


def test_as_kind_not_offered_leaves_no_rerun_standing_for_a() -> None:
    with pytest.raises(NoNode, match="no node of kind mfp_gpu_NVIDIA_L4"):
        placement(record_on("l4.json"), record_on(None), hardware_split(), ("mfp_cpu",))


def test_a_node_gets_the_reruns_variables_only_and_no_credentials(tmp_path: Path) -> None:
    env = {
        "MLFLOW_TRACKING_URI": "https://user:s3cret@mlflow.example.com",
        "MLFLOW_FINGERPRINT_RERUN_TOKEN": "abc",
        "MLFLOW_FINGERPRINT_NVML_REPLAY": "/here/h100.json",
        "OMP_NUM_THREADS": "2",
        "AWS_SECRET_ACCESS_KEY": "k",
        "PATH": "/here/bin",
    }
    assert sent_env(env) == {
        "MLFLOW_TRACKING_URI": "https://mlflow.example.com",
        "MLFLOW_FINGERPRINT_RERUN_TOKEN": "abc",
        "OMP_NUM_THREADS": "2",
    }
    tree = tmp_path / "tree"
    job = Job(("/venv/python", str(tree / "sub" / "train.py"), "--lr", "1"), tree / "sub", env, 5)
    assert relative_command(job, "python") == (
        ".",
        ["python", "train.py", "--lr", "1"],
    )


def test_an_environment_built_for_the_packages_is_the_interpreter_the_node_runs(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    built = "/cache/envs/abc/bin/python"
    job = Job((built, str(tree / "train.py")), tree, {}, 5, tree=tree, built=True)
    assert relative_command(job, "python") == (".", [built, "train.py"])
    plain = Job(("/venv/python", str(tree / "train.py")), tree, {}, 5, tree=tree)
    assert relative_command(plain, None) == (".", ["/venv/python", "train.py"])


def test_executor_spellings() -> None:
    assert executor_for(None) == LocalProcess()
    assert ExecutorSpec.parse("slurm:gpu") == ExecutorSpec("slurm", "gpu")
    assert ExecutorSpec.parse("slurm") == ExecutorSpec("slurm", None)
    assert ExecutorSpec.parse("ray+http://127.0.0.1:8265") == ExecutorSpec(
        "ray", "http://127.0.0.1:8265"
    )
    assert ExecutorSpec.parse("ray://head:10001") == ExecutorSpec("ray", "ray://head:10001")
    with pytest.raises(UsageError, match="--executor takes"):
        ExecutorSpec.parse("kubernetes://x")
