"""Short human descriptions of a fingerprint: the text summary and the values of the UI tags.

Every function takes the plain record (``Fingerprint.to_dict()`` or a loaded JSON), so the same
words appear in ``fingerprint capture``, ``fingerprint show`` and the MLflow run table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model.fingerprint import Fingerprint, get_path, is_unavailable

Record = Mapping[str, Any]


def _device_label(device: Any) -> tuple[str, str]:
    if not isinstance(device, Mapping) or is_unavailable(device):
        return "unknown GPU", ""
    name = device.get("name")
    details = [device.get("architecture")]
    capability = device.get("compute_capability")
    if isinstance(capability, str):
        details.append("sm_" + capability.replace(".", ""))
    if device.get("mig_mode") == "enabled":
        details.append("MIG")
    return (
        name if isinstance(name, str) else "unknown GPU",
        ", ".join(d for d in details if isinstance(d, str)),
    )


def gpu_summary(section: Any) -> str:
    """One line for a record's ``gpu`` section (the ``fingerprint.gpu`` tag):
    ``NVIDIA H100 80GB HBM3 x1 (Hopper, sm_90)``, models joined with `` + ``, ``MIG`` added for a
    partitioned GPU (its SMs are split), or ``none`` where there is no readable GPU.

    Here rather than beside the GPU probe: it reads a record, so the summary (and whatever shows
    a record) need not import the probes."""
    if not isinstance(section, Mapping) or is_unavailable(section):
        return "none"
    devices = section.get("devices")
    if not isinstance(devices, Sequence) or isinstance(devices, str):
        return "none"
    counts: dict[tuple[str, str], int] = {}
    for device in devices:
        label = _device_label(device)
        counts[label] = counts.get(label, 0) + 1
    parts = [
        f"{name} x{n}" + (f" ({details})" if details else "")
        for (name, details), n in counts.items()
    ]
    return " + ".join(parts) or "none"


def value_text(value: Any) -> str:
    """A field value as a person reads it; unavailable fields say so briefly."""
    if is_unavailable(value):
        return "unavailable"
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def gpu_text(record: Record) -> str:
    """``NVIDIA H100 80GB HBM3 x1 (Hopper, sm_90)``, models joined with ``+``, or ``none``."""
    return gpu_summary(record.get("gpu"))


def tf32_text(record: Record) -> str:
    """``matmul=off,cudnn=on``: whether CUDA matmuls and cuDNN convs may use TF32."""
    precision = get_path(record, "numerics.fp32_precision")
    if not isinstance(precision, Mapping):
        return "unavailable"

    def state(*nodes: str) -> str:
        values = {precision.get(n) for n in nodes}
        if values == {"tf32"}:
            return "on"
        if "tf32" in values:
            return "partial"
        return "off"

    text = f"matmul={state('cuda_matmul')},cudnn={state('cudnn_conv', 'cudnn_rnn')}"
    override = get_path(record, "numerics.env.NVIDIA_TF32_OVERRIDE")
    return f"{text},NVIDIA_TF32_OVERRIDE={override}" if override is not None else text


def deterministic_text(record: Record) -> str:
    """``on``, ``warn`` (nondeterministic kernels still run), ``off``, plus cudnn.benchmark."""
    algorithms = get_path(record, "determinism.deterministic_algorithms")
    warn_only = get_path(record, "determinism.warn_only")
    if is_unavailable(algorithms) or algorithms is None:
        mode = "unavailable"
    elif algorithms:
        mode = "warn" if warn_only is True else "on"
    else:
        mode = "off"
    benchmark = get_path(record, "determinism.cudnn_benchmark")
    return f"{mode},benchmark=on" if benchmark is True else mode


def determinism_request_text(record: Record) -> str:
    """`` · asked on by mlflow_fingerprint.fingerprinted``: the decision behind the flags, for the
    summary only (the ``fingerprint.deterministic`` tag stays the flags); empty where no wrapper or
    trainer recorded one."""
    request = get_path(record, "determinism.requested")
    if not isinstance(request, Mapping) or is_unavailable(request):
        return ""
    by = request.get("by")
    return f" · asked {value_text(request.get('mode'))}" + (f" by {by}" if by else "")


def seed_text(record: Record) -> str:
    requested = get_path(record, "seeds.requested")
    if requested is not None:
        return str(requested)
    tf_seed = get_path(record, "tensorflow.global_seed")
    if isinstance(tf_seed, int) and not isinstance(tf_seed, bool):
        return f"{tf_seed} (TensorFlow global seed)"
    initial = get_path(record, "seeds.torch_initial_seed")
    return f"unseeded (torch initial seed {initial})" if isinstance(initial, int) else "unseeded"


def loaders_value(record: Record, key: str) -> str:
    """One loader's value, several joined with ``,``, a declared value, or ``unknown``."""
    loaders = get_path(record, "data.loaders") or []
    values = [str(loader.get(key)) for loader in loaders if isinstance(loader, Mapping)]
    if values:
        return ",".join(dict.fromkeys(values))
    declared = get_path(record, f"data.declared.{key}")
    return str(declared) if declared is not None else "unknown"


def git_text(record: Record) -> str:
    git = record.get("git")
    if not isinstance(git, Mapping) or is_unavailable(git):
        return value_text(git) if git is not None else "—"
    commit = git.get("commit")
    parts = [commit[:10] if isinstance(commit, str) else value_text(commit)]
    if git.get("branch"):
        parts.append(f"on {git['branch']}")
    dirty = git.get("dirty")
    if dirty is True:
        parts.append(f"dirty ({git.get('changed_count', '?')} changed)")
    elif dirty is False:
        parts.append("clean")
    if git.get("remote_url"):
        parts.append(str(git["remote_url"]))
    return " · ".join(parts)


def _section_line(record: Record, name: str, fields: list[tuple[str, str]]) -> str:
    section = record.get(name)
    if is_unavailable(section):
        return f"unavailable ({section['unavailable']})"
    return " · ".join(
        f"{label} {value_text(get_path(record, f'{name}.{path}'))}" for label, path in fields
    )


def framework_rows(record: Record) -> list[tuple[str, str]]:
    """The ``tensorflow`` and ``keras`` lines, only for a program that had imported them."""
    rows = []
    if get_path(record, "tensorflow.imported") is True:
        gpus = get_path(record, "tensorflow.gpus")
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
    if get_path(record, "keras.imported") is True:
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
    """A dozen lines a person can paste into a bug report."""
    record = fp.to_dict() if isinstance(fp, Fingerprint) else fp
    hashes = record.get("hashes", {})
    gpu = record.get("gpu")
    gpu_extra = ""
    if isinstance(gpu, Mapping) and not is_unavailable(gpu):
        gpu_extra = (
            f" · driver {value_text(gpu.get('driver_version'))}"
            f" · driver CUDA {value_text(gpu.get('cuda_driver_version'))}"
        )
    elif is_unavailable(gpu):
        gpu_extra = f" ({gpu['unavailable']})"
    platform = record.get("platform", {})
    cpu = platform.get("cpu", {}) if isinstance(platform, Mapping) else {}
    toolkit = get_path(record, "cuda.toolkit.version")
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
            f"{value_text(get_path(record, 'python.implementation'))} "
            f"{value_text(get_path(record, 'python.version'))}",
        ),
        (
            "platform",
            f"{value_text(platform.get('os'))} · kernel "
            f"{value_text(platform.get('kernel'))} · {value_text(platform.get('libc'))}"
            f" · {value_text(cpu.get('model'))} ({value_text(cpu.get('logical_cores'))}"
            f" cores) · container {value_text(get_path(record, 'platform.container.kind'))}"
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
    return "\n".join([head, *(f"{label.ljust(width)}  {text}" for label, text in rows)])
