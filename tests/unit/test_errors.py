"""The package's errors and its ``warn``, attributed to the caller's line."""

from __future__ import annotations

import signal
import warnings

from mlflow_fingerprint.errors import (
    FingerprintError,
    FingerprintWarning,
    RefusedFile,
    StoreError,
    Terminated,
    TrainingStopped,
    Unauthorized,
    Unreachable,
    warn,
)


def test_stop_and_termination_escape_a_plain_except_exception() -> None:
    stopped = TrainingStopped(12)
    assert not isinstance(stopped, Exception)
    assert stopped.step == 12
    assert "step 12" in str(stopped)
    terminated = Terminated(signal.SIGTERM)
    assert isinstance(terminated, KeyboardInterrupt)
    assert (terminated.name, str(terminated)) == ("SIGTERM", "SIGTERM received")


def test_the_hierarchy_the_callers_catch_on() -> None:
    assert issubclass(RefusedFile, FingerprintError)
    assert issubclass(FingerprintError, ValueError)
    assert issubclass(Unauthorized, Unreachable)
    assert StoreError("NOT_FOUND: run x", "RESOURCE_DOES_NOT_EXIST").error_code == (
        "RESOURCE_DOES_NOT_EXIST"
    )


def test_warn_is_attributed_to_the_first_frame_outside_the_package() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn("the server is unreachable")
    assert len(caught) == 1
    assert caught[0].category is FingerprintWarning
    assert caught[0].filename == __file__
