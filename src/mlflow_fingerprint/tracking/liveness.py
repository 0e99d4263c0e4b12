"""Which process wrote a spool, and whether it is provably gone.

``fingerprint sync`` ends a run as KILLED only when the process that was writing it can no longer
end it itself. A pid alone cannot say that: the pid may be on another host, in another container
(PID namespace), or reused by a new process after the writer died. So the spool records, when it
is created, the writer's pid with what makes it unique: host name, kernel boot id, PID namespace,
and the process's start time (clock ticks since boot, from ``/proc/<pid>/stat``). The writer is
gone when its host rebooted, or its pid no longer exists, is a zombie, or belongs to a process
that started at another time. Anything that cannot be checked from here counts as alive.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROC = "/proc"


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks since boot) of ``pid``, or None where there is no such
    process or no ``/proc``. The name field may hold spaces and parentheses: parse after it."""
    text = _read(f"{PROC}/{pid}/stat")
    if text is None:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])  # fields 3 (state) and 22 (starttime) of proc(5)


def _pid_namespace() -> str | None:
    try:
        return os.readlink(f"{PROC}/self/ns/pid")
    except OSError:
        return None


def identity() -> dict[str, Any]:
    """What identifies this process across hosts, containers, pid reuse and reboots."""
    pid = os.getpid()
    stat = _stat(pid)
    return {
        "pid": pid,
        "hostname": os.uname().nodename,
        "boot_id": _read(f"{PROC}/sys/kernel/random/boot_id"),
        "pid_namespace": _pid_namespace(),
        "start_ticks": stat[1] if stat else None,
    }


@dataclass(frozen=True)
class Writer:
    """Whether a spool's writer is provably gone, and why (or why that cannot be known)."""

    gone: bool
    why: str


def _differ(recorded: Mapping[str, Any], key: str, here: object) -> bool:
    """Both sides known and different: an unknown side proves nothing."""
    return recorded.get(key) is not None and here is not None and recorded[key] != here


def judge(recorded: Mapping[str, Any] | None) -> Writer:
    """Judge the writer that ``identity()`` described, from this process."""
    if not recorded or not isinstance(recorded.get("pid"), int):
        return Writer(False, "the spool does not say which process wrote it")
    pid, host = recorded["pid"], recorded.get("hostname")
    if host != os.uname().nodename:
        return Writer(
            False, f"process {pid} on {host} (another host) may still run; sync there to end it"
        )
    if _differ(recorded, "boot_id", _read(f"{PROC}/sys/kernel/random/boot_id")):
        return Writer(True, f"process {pid} on {host} ended when the host restarted")
    if _differ(recorded, "pid_namespace", _pid_namespace()):
        return Writer(False, f"process {pid} in another container on {host} may still run")
    stat = _stat(pid)
    if stat is None:  # gone, or no /proc here, or hidden from us (hidepid): ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return Writer(True, f"process {pid} on {host} exited")
        except PermissionError:
            pass  # it exists, owned by another user
        return Writer(False, f"process {pid} on {host} may still run")
    state, start = stat
    if state in ("Z", "X"):
        return Writer(True, f"process {pid} on {host} exited")
    if _differ(recorded, "start_ticks", start):
        return Writer(True, f"process {pid} on {host} exited; its pid is now another process's")
    return Writer(False, f"process {pid} on {host} is still running")
