"""The garbage collector of every Python process the tests start, set as the ``fingerprint``
command sets its own (``mlflow_fingerprint.cli.collector``): off while the process starts, on
over a frozen heap after ``HOLD_S``, and everything frozen at the end.

Why: the suite starts some hundreds of processes (trainings, reruns, servers, CLIs), each of
which imports torch, ``torch._dynamo`` (the first optimizer step does) and MLflow: some hundreds
of thousands of objects, next to none of them garbage, walked again and again by the collector
while they are made; then the interpreter's last collection walks the whole heap once more at
exit, which the frozen heap skips (the figures are in the notes of issue 49). Nothing a process
computes or records depends on when its cyclic garbage is collected.

``make test`` copies this file beside the venv's packages as ``mfp_tests_process_hooks.py``,
imported by ``mfp_tests_process_hooks.pth`` at every interpreter's start. It acts only where
``MFP_TESTS_PROCESS_HOOKS=1`` (``tests/conftest.py`` sets it for the processes started after
it): a program run outside the tests is not touched. The pytest processes themselves take their
collector back at once (``release``): the tests of ``collector`` read theirs.
"""

from __future__ import annotations

import atexit
import gc
import os
from typing import Any

HOLD_S = 20.0  # past a training's imports on a loaded 2-core machine; the command waits 10 s

_timer: Any = None  # the threading.Timer that gives the collector back, where one runs


def _resume() -> None:
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def release() -> None:
    """The collector back as an interpreter starts it (on, nothing frozen), the timer stopped:
    for a process that reads its own collector, even one that reached this after ``HOLD_S``."""
    if _timer is not None:
        _timer.cancel()
    gc.unfreeze()
    gc.enable()


if os.environ.get("MFP_TESTS_PROCESS_HOOKS") == "1":
    import threading  # only here: a process outside the tests imports nothing more

    gc.disable()
    _timer = threading.Timer(HOLD_S, _resume)
    _timer.daemon = True  # never keeps a process alive
    _timer.start()
    # registered first, so it runs last: every other atexit hook has run when the heap freezes
    atexit.register(gc.freeze)
