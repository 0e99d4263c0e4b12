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
class DeterminismRequest:
    """Who asked for deterministic mode, which mode, and what that switch did.

    The flags it set are read back by the determinism probe like any others; this records the
    decision behind them, which a probe cannot read: the wrapper's ``deterministic=``, Lightning's
    ``Trainer(deterministic=...)`` or Hugging Face's ``full_determinism``.
    """

    mode: str  # "on", "warn" or "off" (not asked for); an unrecognised value as its text
    by: str  # the switch: "mlflow_fingerprint.fingerprinted", "lightning.Trainer(deterministic)"
    applied: tuple[str, ...] | None = None  # what was set; None where a framework set it itself

    @classmethod
    def of(cls, value: Any, by: str, applied: tuple[str, ...] | None = None) -> DeterminismRequest:
        """From a switch's own value: True, "warn", False or None (Lightning's "leave as is")."""
        if value is True:
            mode = "on"
        elif value is False or value is None:
            mode = "off"
        elif value == "warn":
            mode = "warn"
        else:
            mode = str(value)
        return cls(mode, by, applied)


@dataclass(frozen=True)
class RunInfo:
    """Facts only the run wrapper knows: a probe cannot read back a seed or a DataLoader."""

    requested_seed: int | None = None
    seeded_by: str | None = None
    # RNG state digests taken right after seeding (a sound "same stream" test), if seeded.
    seed_state_digests: Mapping[str, Any] | None = None
    loaders: tuple[Mapping[str, Any], ...] = ()
    declared: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    deterministic: DeterminismRequest | None = None  # None: nobody recorded a request
    stage: str = "capture"
    # The decorated function's arguments by name (``program.call`` keeps the scalars).
    call: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    # The program's options with their defaults (``capture/options.py``), read on its thread.
    options: Any = None  # options.FoundOptions | None
    # The RNGs read on the training thread at its first step (``seeds.first_step_seeds``): the
    # seed the program trained with, whoever set it.
    first_step: Mapping[str, Any] | None = None
    # What frameworks keep per thread, read on the training thread (``thread_values``); None:
    # read on the thread that captures.
    thread_values: Mapping[str, Any] | None = None
    # What the first step started from (``first_step.FirstStepRecorder``); None: no step yet.
    first_step_record: Mapping[str, Any] | None = None
    # The generators as the wrapper found them when it seeded; None: it did not seed.
    before_seeding: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ProbeContext:
    torch: Any  # the torch module, or None where torch cannot be imported
    torch_error: str | None  # why torch is None
    nvml: Any  # a pynvml-like module, or None
    nvml_error: str | None
    nvml_source: str  # "nvml" or "replay:<file>"
    cwd: Path
    run: RunInfo
