"""Choose the NVML the GPU probe reads: an explicit stand-in, a recorded replay, or real pynvml.

NVML, not torch.cuda, is the source of device facts because reading it never creates a CUDA
context (which would cost the user memory on every GPU and break a later ``fork``). The choice
is made once per capture so a test or a CI job can swap a real GPU's recorded readings in
through :envvar:`MLFLOW_FINGERPRINT_NVML_REPLAY` and drive the unchanged probe code.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..settings import NVML_REPLAY


def _override_source(override: Any) -> str:
    name = getattr(override, "source_name", None)
    return f"replay:{name}" if name else "override"


def _load_replay(path: str) -> tuple[Any, str | None, str]:
    source = f"replay:{Path(path).name}"
    try:
        from .nvml_replay import NvmlReplay, ReplayError
    except ImportError as exc:  # the replay raises the real pynvml exceptions, so it needs them
        return None, f"cannot replay NVML readings: {exc}", source
    try:
        return NvmlReplay.from_file(path), None, source
    except ReplayError as exc:
        return None, f"cannot replay NVML readings ({NVML_REPLAY}): {exc}", source


def load_nvml(override: Any = None) -> tuple[Any, str | None, str]:
    """``(pynvml-like module or None, why it is None, source label)``.

    Order: ``override`` (an object with pynvml's functions, e.g. an ``NvmlReplay``), then the
    recording named by :data:`NVML_REPLAY`, then the installed ``pynvml``. Never raises and never
    initialises NVML: the probe does that, inside its time limit.
    """
    if override is not None:
        return override, None, _override_source(override)
    replay_path = os.environ.get(NVML_REPLAY)
    if replay_path:
        return _load_replay(replay_path)
    try:
        import pynvml
    except ImportError:
        return None, "nvidia-ml-py is not installed", "nvml"
    return pynvml, None, "nvml"
