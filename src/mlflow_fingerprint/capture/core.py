"""Run every probe off the caller's thread, each bounded in time, and assemble a Fingerprint.

A probe that raises or overruns becomes ``{"unavailable": reason}``; nothing it does can reach the
caller's training loop. The probes that wait on the OS (git, nvcc, NVML) run concurrently, each in
a thread of its own, beside one thread that runs the rest in turn, which keeps a whole capture well
under what a single ``pip list`` costs.
"""

from __future__ import annotations

import contextvars
import dataclasses
import threading
import time
from collections import deque
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
    first_step,
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
    "first_step": first_step.probe,
    "python": python_info.probe,
    "platform": platform_info.probe,
    "packages": packages.probe,
    "distributed": distributed.probe,
    "program": program.probe,
    # read only where the program imported them: never imported here
    "tensorflow": tensorflow_info.probe,
    "keras": tensorflow_info.probe_keras,
}
# The probes that wait on the OS: a child process (git, nvcc) or the driver (NVML, cuDNN's
# library). Each gets a thread of its own, so their waits overlap each other and the rest.
WAITING = frozenset({"git", "cuda", "gpu"})
# How long one probe may hold the thread the others share before they are given their own.
SPILL_AFTER_S = 0.25


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def _run_probe(name: str, probe: Probe, ctx: ProbeContext, out: dict[str, Any]) -> None:
    try:
        result = probe(ctx)
        out[name] = result if isinstance(result, dict) else unavailable("probe returned no record")
    except BaseException as exc:  # a probe must never take the caller down
        out[name] = unavailable(f"probe failed: {type(exc).__name__}: {_first_line(exc)}")


def _thread(target: Callable[..., None], *args: Any, name: str) -> threading.Thread:
    """A started daemon thread running ``target`` in a copy of the caller's context: torch keeps
    the values a program assigns to its config modules (``torch._inductor.config``, which
    ``use_deterministic_algorithms`` sets) in context variables, so a bare thread would read the
    defaults instead."""
    thread = threading.Thread(
        target=contextvars.copy_context().run, args=(target, *args), name=name, daemon=True
    )
    thread.start()
    return thread


def _run_in_turn(
    pending: deque[str], probes: dict[str, Probe], ctx: ProbeContext, out: dict[str, Any]
) -> None:
    """Take the next pending probe and run it, until none is left (``run_probes`` may take the
    rest away to threads of their own meanwhile; ``deque.popleft`` hands each name out once)."""
    while True:
        try:
            name = pending.popleft()
        except IndexError:
            return
        _run_probe(name, probes[name], ctx, out)


def run_probes(
    ctx: ProbeContext,
    probes: dict[str, Probe],
    timeout_s: float,
    waiting: frozenset[str] = WAITING,
) -> dict[str, dict[str, Any]]:
    """Run ``probes`` concurrently in daemon threads; a probe still running at the deadline is
    recorded as timed out and left to finish (or hang) without holding the caller.

    The probes named in ``waiting`` get a thread each, started first. The others only read
    Python objects and small files, which the GIL runs one at a time whatever the threads; they
    share one thread and run in turn: a thread each cost a first capture a few milliseconds of
    threads taking the GIL from each other as they start. A probe that holds that thread for
    SPILL_AFTER_S sends each probe still waiting behind it to a thread of its own, so a hang
    costs the others that much time, never their record."""
    results: dict[str, Any] = {}
    deadline = time.monotonic() + timeout_s

    def own_thread(name: str) -> threading.Thread:
        return _thread(_run_probe, name, probes[name], ctx, results, name=f"mfp-probe-{name}")

    threads = [own_thread(name) for name in probes if name in waiting]
    pending = deque(name for name in probes if name not in waiting)
    in_turn = _thread(_run_in_turn, pending, probes, ctx, results, name="mfp-probes")
    left = len(pending)
    while in_turn.is_alive() and (remaining := deadline - time.monotonic()) > 0:
        in_turn.join(min(SPILL_AFTER_S, remaining))
        if in_turn.is_alive() and len(pending) == left:  # one probe held it SPILL_AFTER_S
            while pending:
                threads.append(own_thread(pending.popleft()))
            break
        left = len(pending)
    for thread in (in_turn, *threads):
        thread.join(max(0.0, deadline - time.monotonic()))
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
