"""The text summary of a fingerprint: a dozen lines for ``fingerprint capture`` and ``show``.

It is made of the same readable field values as the UI tags (``model/readable.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..model.fields import (
    CUDA_TOOLKIT_VERSION,
    KERAS_IMPORTED,
    PLATFORM_CONTAINER_KIND,
    PYTHON_IMPLEMENTATION,
    PYTHON_VERSION,
    TENSORFLOW_GPUS,
    TENSORFLOW_IMPORTED,
)
from ..model.fingerprint import Fingerprint, get_path, is_unavailable
from ..model.readable import (
    Record,
    determinism_request_text,
    deterministic_text,
    git_text,
    gpu_text,
    loaders_value,
    seed_text,
    tf32_text,
    value_text,
)
from ..wrap import columns, wrap


def _section_line(record: Record, name: str, fields: list[tuple[str, str]]) -> str:
    section = record.get(name)
    if section is not None and is_unavailable(section):
        return f"unavailable ({section['unavailable']})"
    return " · ".join(
        f"{label} {value_text(get_path(record, f'{name}.{path}'))}" for label, path in fields
    )


def framework_rows(record: Record) -> list[tuple[str, str]]:
    """The ``tensorflow`` and ``keras`` lines, only for a program that had imported them."""
    rows = []
    if get_path(record, TENSORFLOW_IMPORTED) is True:
        gpus = get_path(record, TENSORFLOW_GPUS)
        line = _section_line(
            record,
            "tensorflow",
            [
                ("", "version"),
                ("op determinism", "op_determinism"),
                ("TF32", "tf32_execution"),
                ("global seed", "global_seed"),
            ],
        ).lstrip()
        if isinstance(gpus, list | tuple):
            line += f" · GPUs {', '.join(map(str, gpus)) or 'none'}"
        rows.append(("tensorflow", line))
    if get_path(record, KERAS_IMPORTED) is True:
        rows.append(
            (
                "keras",
                _section_line(
                    record,
                    "keras",
                    [("", "version"), ("backend", "backend"), ("policy", "mixed_precision_policy")],
                ).lstrip(),
            )
        )
    return rows


def summary_text(fp: Fingerprint | Record) -> str:
    """A dozen lines a person can paste into a bug report, in ``columns()``."""
    record = fp.to_dict() if isinstance(fp, Fingerprint) else fp
    hashes = record.get("hashes", {})
    gpu = record.get("gpu")
    gpu_extra = ""
    if isinstance(gpu, Mapping) and not is_unavailable(gpu):
        gpu_extra = (
            f" · driver {value_text(gpu.get('driver_version'))}"
            f" · driver CUDA {value_text(gpu.get('cuda_driver_version'))}"
        )
    elif gpu is not None and is_unavailable(gpu):
        gpu_extra = f" ({gpu['unavailable']})"
    platform = record.get("platform", {})
    cpu = platform.get("cpu") if isinstance(platform, Mapping) else None
    cpu = cpu if isinstance(cpu, Mapping) else {}  # a record is input: any value may be there
    toolkit = get_path(record, CUDA_TOOLKIT_VERSION)
    packages = record.get("packages", {})
    rows = [
        (
            "fingerprint",
            f"{hashes.get('fingerprint', '?')} (env {hashes.get('env', '?')}, "
            f"numerics {hashes.get('numerics', '?')}, recipe {hashes.get('recipe', '?')})",
        ),
        ("gpu", gpu_text(record) + gpu_extra),
        (
            "cuda",
            _section_line(
                record,
                "cuda",
                [
                    ("torch built with", "torch_built_with"),
                    ("cuDNN", "cudnn_version"),
                    ("NCCL", "nccl_version"),
                    ("computed on", "computed_on"),
                ],
            )
            + f" · toolkit {value_text(toolkit)}",
        ),
        (
            "torch",
            _section_line(
                record,
                "torch",
                [
                    ("", "version"),
                    ("CPU kernels", "cpu_capability"),
                    ("threads", "threads.intra_op"),
                    ("BLAS", "build.blas_info"),
                ],
            ).lstrip(),
        ),
        *framework_rows(record),
        ("tf32", tf32_text(record)),
        ("deterministic", deterministic_text(record) + determinism_request_text(record)),
        ("seed", seed_text(record)),
        (
            "data",
            f"batch_size {loaders_value(record, 'batch_size')} · "
            f"num_workers {loaders_value(record, 'num_workers')}",
        ),
        ("git", git_text(record)),
        (
            "python",
            f"{value_text(get_path(record, PYTHON_IMPLEMENTATION))} "
            f"{value_text(get_path(record, PYTHON_VERSION))}",
        ),
        (
            "platform",
            f"{value_text(platform.get('os'))} · kernel "
            f"{value_text(platform.get('kernel'))} · {value_text(platform.get('libc'))}"
            f" · {value_text(cpu.get('model'))} ({value_text(cpu.get('logical_cores'))}"
            f" cores) · container {value_text(get_path(record, PLATFORM_CONTAINER_KIND))}"
            if isinstance(platform, Mapping) and not is_unavailable(platform)
            else value_text(platform),
        ),
        (
            "packages",
            f"{value_text(packages.get('count'))} distributions · digest "
            f"{value_text(packages.get('digest'))}"
            if isinstance(packages, Mapping)
            else "unavailable",
        ),
    ]
    width = max(len(label) for label, _ in rows)
    head = (
        f"mlflow-fingerprint {record.get('tool_version', '?')} · schema "
        f"{record.get('schema_version', '?')} · captured {record.get('captured_at', '?')}"
    )
    cols = columns()  # a long line wraps under its value, at words and path boundaries
    lines = wrap(head, cols, "  ")
    for label, text in rows:
        lines += wrap(text, cols, " " * (width + 2), f"{label.ljust(width)}  ")
    return "\n".join(lines)
