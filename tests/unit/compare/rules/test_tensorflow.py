"""TensorFlow and Keras fields: hashed only where the framework was imported, and ranked by the
rules of ``compare/rules/tensorflow.py`` the way the usual Keras cases need
(docs/design.md, "The problem").

Records here are the real CPU capture (tests/fixtures) with the ``tensorflow`` and ``keras``
sections of a real TensorFlow 2.21 CPU capture added; the real training runs are in
tests/test_tensorflow.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from mlflow_fingerprint import diff, layout
from mlflow_fingerprint.audit import audit
from mlflow_fingerprint.compare import facts
from mlflow_fingerprint.compare.rules import rule_for
from mlflow_fingerprint.model.hashing import compute_hashes
from mlflow_fingerprint.present.summary import summary_text
from mlflow_fingerprint.tracking.tags import fingerprint_tags
from support.records import cpu_record, edit, gpu_record

GPU = "/physical_device:GPU:0"


def tf_sections(**tensorflow: Any) -> dict[str, Any]:
    """The two sections as TensorFlow 2.21 (CPU wheel) and Keras 3.15 record them."""
    section = {
        "imported": True,
        "version": "2.21.0",
        "git_version": "v2.21.0-rc1-5-ga481b10260d",
        "build": {
            "cuda_version": None,
            "cudnn_version": None,
            "is_cuda_build": False,
            "is_rocm_build": False,
        },
        "gpus": [],
        "op_determinism": False,
        "tf32_execution": True,
        "threads": {"inter_op": 0, "intra_op": 0},
        "jit": "",
        "global_seed": None,
        "env": {
            "TF_DETERMINISTIC_OPS": None,
            "TF_CUDNN_DETERMINISTIC": None,
            "TF_CUDNN_USE_AUTOTUNE": None,
            "TF_ENABLE_ONEDNN_OPTS": None,
            "TF_XLA_FLAGS": None,
            "TF_NUM_INTEROP_THREADS": None,
            "TF_NUM_INTRAOP_THREADS": None,
        },
    }
    section.update(tensorflow)
    keras = {
        "imported": True,
        "version": "3.15.1",
        "backend": "tensorflow",
        "mixed_precision_policy": "float32",
        "floatx": "float32",
        "global_seed": tensorflow.get("global_seed"),
        "env": {"KERAS_BACKEND": None},
    }
    return {"tensorflow": section, "keras": keras}


def keras_record(base: dict[str, Any] | None = None, **tensorflow: Any) -> dict[str, Any]:
    """A Keras program's record: torch read by the capture only, never by the program."""
    record = dict(base if base is not None else cpu_record())
    record.update(tf_sections(**tensorflow))
    return edit(record, **{"seeds.torch_imported_by_program": False})


# A seed torch drew for itself (64 bits from the OS): one a program sets is far smaller.
DRAWN_SEED = 5_844_961_231_448_519_737


def top(report: Any) -> tuple[str, str]:
    first = report.differences[0]
    return first.field, first.effect


def classified(report: Any, field: str) -> Any:
    found = [d for d in report.differences if d.field == field]
    assert found, f"{field} not among {[d.field for d in report.differences]}"
    return found[0]


# -- hashing -------------------------------------------------------------------------------------


def test_a_program_without_tensorflow_hashes_as_before_these_sections_existed() -> None:
    old = cpu_record()  # recorded before the sections existed
    new = {**old, "tensorflow": {"imported": False}, "keras": {"imported": False}}
    assert compute_hashes(new) == compute_hashes(old)


@pytest.mark.parametrize(
    ("field", "value", "group"),
    [
        ("tensorflow.op_determinism", True, "numerics"),
        ("tensorflow.tf32_execution", False, "numerics"),
        ("tensorflow.threads.intra_op", 1, "numerics"),
        ("keras.mixed_precision_policy", "mixed_float16", "numerics"),
        ("tensorflow.global_seed", 0, "recipe"),
        ("tensorflow.version", "2.20.0", "env"),
        ("keras.backend", "jax", "env"),
    ],
)
def test_each_tensorflow_field_moves_only_its_own_hash(field: str, value: Any, group: str) -> None:
    base = keras_record()
    changed = edit(base, **{field: value})["hashes"]
    moved = {g for g in ("env", "numerics", "recipe") if changed[g] != base["hashes"][g]}
    assert moved == {group}


# -- the usual Keras cases -----------------------------------------------------------------------


def test_seeded_against_unseeded_keras_names_the_tensorflow_seed_first() -> None:
    """Article 000: the same Keras script with and without the global seed; torch, imported only
    by the capture, drew a different seed of its own in each process."""
    a = keras_record(global_seed=0)
    b = edit(keras_record(), **{"seeds.torch_initial_seed": DRAWN_SEED})
    report = diff(a, b)
    assert top(report) == ("tensorflow.global_seed", "randomness")
    assert "Only one run set TensorFlow's global seed" in report.differences[0].explanation
    assert classified(report, "seeds.torch_initial_seed").effect == "none"


def test_torch_seed_is_a_weak_cause_where_the_program_imported_torch_itself() -> None:
    a = edit(keras_record(global_seed=0), **{"seeds.torch_imported_by_program": True})
    b = edit(a, **{"seeds.torch_initial_seed": DRAWN_SEED})
    report = diff(a, b)
    assert top(report) == ("seeds.torch_initial_seed", "randomness")
    assert "seeded TensorFlow" in report.differences[0].explanation


def test_op_determinism_on_against_off_on_the_cpu() -> None:
    report = diff(keras_record(global_seed=0, op_determinism=True), keras_record(global_seed=0))
    assert top(report) == ("tensorflow.op_determinism", "numerics")
    assert "Both computed on the CPU" in report.differences[0].explanation


def test_op_determinism_on_a_gpu_is_the_strong_cause() -> None:
    on = keras_record(global_seed=0, op_determinism=True, gpus=[GPU])
    report = diff(on, keras_record(global_seed=0, gpus=[GPU]))
    assert top(report) == ("tensorflow.op_determinism", "numerics")
    assert "mostly on GPUs" in report.differences[0].explanation


def test_tensorflow_on_a_gpu_against_the_cpu_article_000() -> None:
    gpu = keras_record(global_seed=0, gpus=[GPU])
    report = diff(gpu, keras_record(global_seed=0))
    assert top(report) == ("tensorflow.gpus", "numerics")


def test_the_deterministic_ops_variable_is_named_through_the_flag_it_sets() -> None:
    """TF_DETERMINISTIC_OPS=1 turns op determinism on: the flag differs too and ranks first; where
    both runs ended with the same flag, the variable changed nothing."""
    env_on = {**tf_sections()["tensorflow"]["env"], "TF_DETERMINISTIC_OPS": "1"}
    report = diff(keras_record(op_determinism=True, env=env_on), keras_record())
    assert top(report) == ("tensorflow.op_determinism", "numerics")
    same = diff(keras_record(op_determinism=True, env=env_on), keras_record(op_determinism=True))
    assert classified(same, "tensorflow.env.TF_DETERMINISTIC_OPS").effect == "none"


def test_cudnn_deterministic_matters_only_where_tensorflow_saw_a_gpu() -> None:
    """Article 002's TF_CUDNN_DETERMINISTIC acts on cuDNN, so on the CPU it changes nothing."""
    env_on = {**tf_sections()["tensorflow"]["env"], "TF_CUDNN_DETERMINISTIC": "1"}
    cpu = diff(keras_record(env=env_on), keras_record())
    assert classified(cpu, "tensorflow.env.TF_CUDNN_DETERMINISTIC").effect == "none"
    gpu = diff(keras_record(env=env_on, gpus=[GPU]), keras_record(gpus=[GPU]))
    assert top(gpu) == ("tensorflow.env.TF_CUDNN_DETERMINISTIC", "numerics")


def test_tensorflow_tf32_needs_an_ampere_gpu_tensorflow_saw() -> None:
    cpu = diff(keras_record(tf32_execution=False), keras_record())
    assert classified(cpu, "tensorflow.tf32_execution").effect == "none"
    a100 = gpu_record("a100")
    on = keras_record(a100, gpus=[GPU])
    report = diff(keras_record(a100, gpus=[GPU], tf32_execution=False), on)
    assert top(report) == ("tensorflow.tf32_execution", "numerics")
    v100 = gpu_record("v100")
    older = diff(
        keras_record(v100, gpus=[GPU], tf32_execution=False), keras_record(v100, gpus=[GPU])
    )
    assert classified(older, "tensorflow.tf32_execution").effect == "none"


def test_a_mixed_precision_policy_is_a_numerics_cause() -> None:
    a = keras_record(global_seed=0)
    b = edit(a, **{"keras.mixed_precision_policy": "mixed_float16"})
    assert top(diff(a, b)) == ("keras.mixed_precision_policy", "numerics")


def test_only_one_program_imported_tensorflow() -> None:
    """A torch program against a Keras one: one recipe difference, not a dozen TensorFlow fields."""
    torch_run = {**cpu_record(), "tensorflow": {"imported": False}, "keras": {"imported": False}}
    report = diff(torch_run, keras_record(global_seed=0))
    causes = [d.field for d in report.differences if d.effect != "none"]
    assert "tensorflow.imported" in causes
    assert not [f for f in causes if f.startswith("tensorflow.") and f != "tensorflow.imported"]


def test_a_record_from_before_tensorflow_was_captured_is_not_a_difference() -> None:
    new = {**cpu_record(), "tensorflow": {"imported": False}, "keras": {"imported": False}}
    report = diff(cpu_record(), new)
    assert [d.effect for d in report.differences if d.field.startswith(("tensorflow", "keras"))]
    assert all(
        d.effect == "none"
        for d in report.differences
        if d.field.startswith(("tensorflow", "keras"))
    )


def test_every_tensorflow_field_of_a_real_capture_has_a_rule() -> None:
    record = keras_record()
    for section in ("tensorflow", "keras"):
        for key, value in record[section].items():
            paths = [f"{section}.{key}.{k}" for k in value] if isinstance(value, dict) else []
            for path in paths or [f"{section}.{key}"]:
                assert rule_for(path) is not None, path


# -- facts, audit, tags --------------------------------------------------------------------------


def test_a_tensorflow_seed_counts_as_seeded() -> None:
    assert facts.seeded(keras_record(global_seed=0))
    assert not facts.seeded(keras_record())
    tags = fingerprint_tags(keras_record(global_seed=0), set())
    assert tags[layout.TAG_SEED] == "0 (TensorFlow global seed)"


def test_audit_of_a_tensorflow_process() -> None:
    checks = {f.check: f for f in audit(keras_record()).findings}
    assert checks["tensorflow_seed"].severity == "high"
    assert checks["tensorflow_op_determinism"].severity == "low"  # CPU only
    gpu = {f.check: f for f in audit(keras_record(gpus=[GPU])).findings}
    assert gpu["tensorflow_op_determinism"].severity == "high"
    fixed = audit(keras_record(global_seed=0, op_determinism=True))
    assert not {"tensorflow_seed", "tensorflow_op_determinism", "seeds"} & {
        f.check for f in fixed.findings
    }
    torch_only = {**cpu_record(), "tensorflow": {"imported": False}}
    assert not [f for f in audit(torch_only).findings if f.check.startswith("tensorflow")]


def test_summary_has_framework_lines_only_for_a_program_that_imported_them() -> None:
    text = summary_text(keras_record(global_seed=0, op_determinism=True))
    assert "tensorflow     2.21.0 · op determinism on · TF32 on · global seed 0 · GPUs none" in text
    assert "keras          3.15.1 · backend tensorflow · policy float32" in text
    assert "tensorflow " not in summary_text(cpu_record())


def test_tensorflow_tags_only_on_tensorflow_runs() -> None:
    tags = fingerprint_tags(keras_record(op_determinism=True), set())
    assert tags[layout.TAG_TENSORFLOW] == "2.21.0"
    assert tags[layout.TAG_TF_OP_DETERMINISM] == "on"
    assert layout.TAG_TENSORFLOW not in fingerprint_tags(cpu_record(), set())
