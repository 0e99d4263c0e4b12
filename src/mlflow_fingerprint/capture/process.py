"""Short child processes whose output is read from temporary files, never from pipes.

A training process forks: DataLoader workers are ``fork()`` copies of it, made on the training
thread while a probe may be starting git on another. A fork taken between ``pipe()`` and the
parent closing its copy of the write end keeps that write end open for the worker's whole life,
so a reader waiting for end-of-file waits for the worker to exit, not for git. Waiting for the
child's exit and then reading a file does not depend on who else holds the descriptor.

``subprocess`` has a pipe of its own: after forking the child it reads an error pipe until every
copy of its write end is closed, which a worker forked in that moment holds too. The child is
therefore started with ``posix_spawn`` (which reports errors without a pipe): subprocess takes
that path for an absolute executable, no ``cwd`` and ``close_fds=False`` (our descriptors are
non-inheritable anyway), so git is given ``-C`` instead of a working directory.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, cast

from ..environment import environ_copy


@dataclass(frozen=True)
class Started:
    """A running child and the files its stdout and stderr go to."""

    proc: subprocess.Popen[bytes]
    out: IO[bytes]
    err: IO[bytes]


def start(cmd: Sequence[str], env: Mapping[str, str] | None = None) -> Started:
    """Start ``cmd`` with stdin closed and stdout/stderr going to anonymous temporary files, in
    ``env`` (default: a copy of this process's, see ``environment``). Raises FileNotFoundError
    when the program is not on PATH."""
    executable = shutil.which(cmd[0])
    if executable is None:
        raise FileNotFoundError(f"{cmd[0]} is not on PATH")
    # Closed by finish(): the files outlive this function, so no ``with`` here.
    out = tempfile.TemporaryFile()  # noqa: SIM115
    err = tempfile.TemporaryFile()  # noqa: SIM115
    try:
        proc = subprocess.Popen(
            [executable, *cmd[1:]],
            env=dict(env) if env is not None else environ_copy(),
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
        )
    except BaseException:
        out.close()
        err.close()
        raise
    return Started(proc, out, err)


def wait(proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Wait for ``proc`` to exit. ``Popen.wait(timeout)`` polls with growing sleeps, which adds
    milliseconds to a child that takes a few; a pidfd wakes the moment the child exits."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux >= 5.3: the polling wait
        proc.wait(timeout=timeout_s)
        return
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if not poller.poll(timeout_s * 1000):
            raise subprocess.TimeoutExpired(proc.args, timeout_s)
    finally:
        os.close(pidfd)
    proc.wait()


def finish(started: Started, timeout_s: float) -> tuple[int, str, str]:
    """Wait for the child (killed at ``timeout_s``, raising TimeoutError), then read its output:
    (exit status, stdout, stderr)."""
    proc, out, err = started.proc, started.out, started.err
    try:
        try:
            wait(proc, timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            args = cast("list[str]", proc.args)  # start() passes Popen a list of str
            raise TimeoutError(f"{args[0]} took longer than {timeout_s:g}s") from None
        out.seek(0)
        err.seek(0)
        return (
            proc.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
        )
    finally:
        out.close()
        err.close()


def run(
    cmd: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None
) -> tuple[int, str, str]:
    return finish(start(cmd, env), timeout_s)
