"""Small process helpers shared by the infrastructure modules: free ports, waiting, stopping."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


class InfraError(RuntimeError):
    """A part of the test infrastructure could not be started; the message says what and why."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for(
    check: Callable[[], bool],
    timeout_s: float,
    what: str,
    alive: Callable[[], bool] = lambda: True,
    log: Path | None = None,
) -> None:
    """Poll ``check`` until true; fail early if the process died, with the tail of its log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        if not alive():
            raise InfraError(f"{what} exited while starting{log_tail(log)}")
        time.sleep(0.1)
    raise InfraError(f"{what} did not become ready in {timeout_s:g}s{log_tail(log)}")


def log_tail(log: Path | None, lines: int = 15) -> str:
    if log is None or not log.exists():
        return ""
    text = log.read_text(errors="replace").strip().splitlines()[-lines:]
    return "; log tail:\n" + "\n".join(text)


def kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL, wait_s: float = 10.0) -> None:
    """Signal the process group started with ``start_new_session=True`` (workers included)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        return
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(wait_s)
