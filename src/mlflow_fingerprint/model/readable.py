"""One-line readable values of a record's fields: the GPU, TF32, determinism, seed, loader and
git in words.

Every function takes the plain record (``Fingerprint.to_dict()`` or a loaded JSON), so the same
words appear in the MLflow run table (``tracking/tags.py``) and in ``fingerprint capture`` and
``fingerprint show`` (``present/summary.py``). Here, below both, so the tags need not reach up
into the presentation layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .fields import (
    DETERMINISM_CUDNN_BENCHMARK,
    DETERMINISM_DETERMINISTIC_ALGORITHMS,
    DETERMINISM_REQUESTED,
    DETERMINISM_WARN_ONLY,
    GIT_DIRTY,
    GPU_DRIVER_VERSION,
    TENSORFLOW_GLOBAL_SEED,
)
from .record import get_path, is_unavailable, read
from .sections import Data, Git, Numerics, Seeds

Record = Mapping[str, Any]


def _device_label(device: object) -> tuple[str, str]:
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


def gpu_summary(section: object) -> str:
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


def value_text(value: object) -> str:
    """A field value as a person reads it; unavailable fields say so briefly."""
    if is_unavailable(value):
        return "unavailable"
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def field_text(record: Record, dotted: str) -> str:
    """A scalar field for a tag: its value in words, ``none`` where the stack has no such thing
    (no GPU, a CPU build of torch), ``unavailable`` where its section could not be read."""
    value = get_path(record, dotted)
    if value is None:
        section = record.get(dotted.split(".")[0])
        return "none" if not is_unavailable(section) else "unavailable"
    return value_text(value)


def flag_text(record: Record, dotted: str) -> str:
    """A switch: ``on`` or ``off``, else what :func:`field_text` says."""
    value = get_path(record, dotted)
    if isinstance(value, bool):
        return "on" if value else "off"
    return field_text(record, dotted)


def driver_text(record: Record) -> str:
    """The NVIDIA driver's version, or ``none`` where no GPU could be read."""
    return "none" if is_unavailable(record.get("gpu")) else field_text(record, GPU_DRIVER_VERSION)


def git_dirty_text(record: Record) -> str:
    """``true`` or ``false``: whether the working tree had uncommitted changes."""
    dirty = Git.from_record(record).dirty
    return str(dirty).lower() if dirty is not None else field_text(record, GIT_DIRTY)


def gpu_text(record: Record) -> str:
    """``NVIDIA H100 80GB HBM3 x1 (Hopper, sm_90)``, models joined with ``+``, or ``none``."""
    return gpu_summary(record.get("gpu"))


def tf32_text(record: Record) -> str:
    """``matmul=off,cudnn=on``: whether CUDA matmuls and cuDNN convs may use TF32."""
    numerics = Numerics.from_record(record)
    precision = numerics.fp32_precision
    if precision is None:
        return "unavailable"

    def state(*nodes: str) -> str:
        # a record is input: a value that is no word (a list, an object) reads as no "tf32"
        values = {v if isinstance(v, str) else None for v in map(precision.get, nodes)}
        if values == {"tf32"}:
            return "on"
        if "tf32" in values:
            return "partial"
        return "off"

    text = f"matmul={state('cuda_matmul')},cudnn={state('cudnn_conv', 'cudnn_rnn')}"
    override = numerics.tf32_override
    return f"{text},NVIDIA_TF32_OVERRIDE={override}" if override is not None else text


def deterministic_text(record: Record) -> str:
    """``on``, ``warn`` (nondeterministic kernels still run), ``off``, plus cudnn.benchmark."""
    algorithms = get_path(record, DETERMINISM_DETERMINISTIC_ALGORITHMS)
    warn_only = get_path(record, DETERMINISM_WARN_ONLY)
    if is_unavailable(algorithms) or algorithms is None:
        mode = "unavailable"
    elif algorithms:
        mode = "warn" if warn_only is True else "on"
    else:
        mode = "off"
    benchmark = get_path(record, DETERMINISM_CUDNN_BENCHMARK)
    return f"{mode},benchmark=on" if benchmark is True else mode


def determinism_request_text(record: Record) -> str:
    """`` · asked on by mlflow_fingerprint.fingerprinted``: the decision behind the flags, for the
    summary only (the ``fingerprint.deterministic`` tag stays the flags); empty where no wrapper or
    trainer recorded one."""
    request = get_path(record, DETERMINISM_REQUESTED)
    if not isinstance(request, Mapping) or is_unavailable(request):
        return ""
    by = request.get("by")
    return f" · asked {value_text(request.get('mode'))}" + (f" by {by}" if by else "")


def seed_text(record: Record) -> str:
    seeds = Seeds.from_record(record)
    if seeds.requested is not None:
        return str(seeds.requested)
    tf_seed = read(record, TENSORFLOW_GLOBAL_SEED)
    if tf_seed is not None:
        return f"{tf_seed} (TensorFlow global seed)"
    initial = seeds.torch_initial_seed
    if initial is None:
        return "unseeded"
    if seeds.origin == "program":
        return f"{initial} (set by the program)"
    return f"unseeded (torch initial seed {initial})"


def training_loader(record: Record) -> Mapping[str, Any] | None:
    """The loader that yielded most batches (the first seen among equals: the training loop's
    loader starts first), or None where the run saw no loader."""
    loaders = Data.from_record(record).loaders
    if not loaders:
        return None

    def batches(loader: Mapping[str, Any]) -> int:
        seen = loader.get("batches_seen")
        return seen if isinstance(seen, int) and not isinstance(seen, bool) else 0

    return max(loaders, key=batches)  # max keeps the first of equals


def loaders_value(record: Record, key: str) -> str:
    """The training loader's value (the other loaders' stay in the fingerprint), else the
    declared value, else ``unknown``."""
    loader = training_loader(record)
    if loader is not None:
        return str(loader.get(key))
    declared = (Data.from_record(record).declared or {}).get(key)
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
