"""SIGTERM and SIGHUP end a rerun as Ctrl-C does (``prove/signals.py``): the signal is sent to
this very process, so nothing is started."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from mlflow_fingerprint.errors import Terminated
from mlflow_fingerprint.prove.signals import ending_on_signals


def test_sigterm_inside_raises_terminated_and_the_handler_is_put_back() -> None:
    before = signal.getsignal(signal.SIGTERM)

    def terminated() -> None:
        with ending_on_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0)  # let the handler run here, inside the block

    with pytest.raises(Terminated) as caught:
        terminated()
    assert caught.value.name == "SIGTERM"
    assert isinstance(caught.value, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_hangup_the_process_ignores_stays_ignored() -> None:
    saved = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with ending_on_signals():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, saved)


def test_off_the_main_thread_the_caller_s_handling_stands() -> None:
    before = signal.getsignal(signal.SIGTERM)
    seen: list[object] = []

    def inside() -> None:
        with ending_on_signals():
            seen.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=inside)
    thread.start()
    thread.join()
    assert seen == [before]
