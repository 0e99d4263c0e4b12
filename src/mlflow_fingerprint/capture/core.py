"""Run every probe, each isolated in its own thread and bounded in time, and assemble a Fingerprint.

A probe that raises or overruns becomes ``{"unavailable": reason}``; nothing it does can reach the
caller's training loop. Probes run concurrently because the slow ones (git, NVML) mostly wait on
the OS, which keeps a whole capture well under what a single ``pip list`` costs.
"""

from __future__ import annotations

import contextvars
import dataclasses
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..model.fingerprint import SCHEMA_VERSION, Fingerprint, unavailable
from ..model.hashing import compute_hashes
from ..settings import settings
from ..torch_import import program_torch
from ..version import __version__
from . import (
    cuda,
    determinism,
    distributed,
    git,
    gpu,
    numerics,
    packages,
    platform_info,
    program,
    python_info,
    seeds,
    tensorflow_info,
    torch_info,
)
from .context import ProbeContext, RunInfo
from .nvml import load_nvml

Probe = Callable[[ProbeContext], dict[str, Any]]

# git first: its processes are the longest path, so its thread should start before the rest.
PROBES: dict[str, Probe] = {
    "git": git.probe,
    "gpu": gpu.probe,
    "cuda": cuda.probe,
    "torch": torch_info.probe,
    "numerics": numerics.probe,
    "determinism": determinism.probe,
    "seeds": seeds.probe,
    "data": seeds.probe_data,
    "python": python_info.probe,
    "platform": platform_info.probe,
    "packages": packages.probe,
    "distributed": distributed.probe,
    "program": program.probe,
    # read only where the program imported them: never imported here
    "tensorflow": tensorflow_info.probe,
    "keras": tensorflow_info.probe_keras,
}


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def _run_probe(name: str, probe: Probe, ctx: ProbeContext, out: dict[str, Any]) -> None:
    try:
        result = probe(ctx)
        out[name] = result if isinstance(result, dict) else unavailable("probe returned no record")
    except BaseException as exc:  # a probe must never take the caller down
        out[name] = unavailable(f"probe failed: {type(exc).__name__}: {_first_line(exc)}")


def run_probes(
    ctx: ProbeContext, probes: dict[str, Probe], timeout_s: float
) -> dict[str, dict[str, Any]]:
    """Run ``probes`` concurrently in daemon threads; a probe still running at the deadline is
    recorded as timed out and left to finish (or hang) without holding the caller.

    Each thread runs in a copy of the caller's context: torch keeps the values a program assigns
    to its config modules (``torch._inductor.config``, which ``use_deterministic_algorithms``
    sets) in context variables, so a bare thread would read the defaults instead."""
    results: dict[str, Any] = {}
    threads = []
    for name, probe in probes.items():
        t = threading.Thread(
            target=contextvars.copy_context().run,
            args=(_run_probe, name, probe, ctx, results),
            name=f"mfp-probe-{name}",
            daemon=True,
        )
        t.start()
        threads.append((name, t))
    deadline = time.monotonic() + timeout_s
    for _name, t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return {
        name: dict(results[name])
        if name in results
        else unavailable(f"probe timed out after {timeout_s:g}s")
        for name in probes
    }


def make_context(
    run: RunInfo | None = None, nvml: Any = None, cwd: Path | None = None
) -> ProbeContext:
    torch, torch_error = program_torch()  # safe from two threads at once
    nvml_module, nvml_error, nvml_source = load_nvml(nvml)
    return ProbeContext(
        torch=torch,
        torch_error=torch_error,
        nvml=nvml_module,
        nvml_error=nvml_error,
        nvml_source=nvml_source,
        cwd=cwd or Path.cwd(),
        run=run or RunInfo(),
    )


def capture(
    *,
    run: RunInfo | None = None,
    nvml: Any = None,
    cwd: str | Path | None = None,
    timeout_s: float | None = None,
) -> Fingerprint:
    """Fingerprint this process now. Never raises for anything a probe meets; never initialises
    CUDA, mutates global state or records a secret.

    ``nvml`` takes a pynvml-like object (e.g. a replay of recorded readings); ``cwd`` is where the
    git probe looks for the repository (default: the current directory); ``timeout_s`` bounds
    each probe (default: ``MLFLOW_FINGERPRINT_PROBE_TIMEOUT``, 10 s).
    """
    run = run or RunInfo()
    if run.thread_values is None:  # read here, on the caller's thread: probes run on their own
        run = dataclasses.replace(run, thread_values=tensorflow_info.thread_values())
    ctx = make_context(run, nvml, Path(cwd) if cwd is not None else None)
    timeout = settings().probe_timeout_s if timeout_s is None else timeout_s
    sections = run_probes(ctx, PROBES, timeout)
    captured_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "captured_at": captured_at,
        **sections,
    }
    return Fingerprint(
        schema_version=SCHEMA_VERSION,
        tool_version=__version__,
        captured_at=captured_at,
        sections=sections,
        hashes=compute_hashes(record),
    )
