"""What a probe is given: the modules to read from and what the run wrapper knows.

Probes get their torch and NVML handles from here rather than importing them, so a test can hand
the GPU probe a replay of a real GPU's NVML readings and drive the very code a user runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class RunInfo:
    """Facts only the run wrapper knows: a probe cannot read back a seed or a DataLoader."""

    requested_seed: int | None = None
    seeded_by: str | None = None
    # RNG state digests taken right after seeding (a sound "same stream" test), if seeded.
    seed_state_digests: Mapping[str, Any] | None = None
    loaders: tuple[Mapping[str, Any], ...] = ()
    declared: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    deterministic: Any = None
    stage: str = "capture"


@dataclass(frozen=True)
class ProbeContext:
    torch: Any  # the torch module, or None where torch cannot be imported
    torch_error: str | None  # why torch is None
    nvml: Any  # a pynvml-like module, or None
    nvml_error: str | None
    nvml_source: str  # "nvml" or "replay:<file>"
    cwd: Path
    run: RunInfo
