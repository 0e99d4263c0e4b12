"""Every exception and warning the package raises, in one place.

The hierarchy, and what a caller does with each::

    ValueError
    └── FingerprintError          bad input: a record, reference or file that cannot be read;
        │                         the message is one line for a user (the CLI prints it, exit 2)
        ├── ResolveError          a reference that leads to no fingerprint: unknown run, run
        │   │                     without a record, unreadable file, unreachable store
        │   └── RefusedFile       a run's stored file that is no regular file, too large or
        │                         too slow: refused, never stood in for by the run's tags
        ├── ExplainError          an experiment ``explain`` cannot analyse: unknown experiment or
        │                         metric, fewer than 3 runs with it, a bad --at or --filter
        ├── ReplayError           an NVML recording that cannot be replayed
        └── BadOverride           a bad MLFLOW_FINGERPRINT_APPLY / _STOP_AFTER value or a bad
                                  ``--set FIELD=VALUE``: one line naming the variable and field
    RuntimeError
    └── RunNotStarted             the run cannot start (a deleted experiment): raised before
                                  train() runs, with one line saying why
    Exception
    ├── UsageError                a bad command line or environment; one line, exit 2
    │   └── BuildFailed           an environment of other package versions cannot be built
    │                             here (a version no index has): that difference is not settable
    ├── BadEvent                  a spool record that is no event: refused by the replay, kept
    ├── Unreachable               the store did not answer (or answered 5xx): keep and retry later
    │   ├── Unauthorized          401/403: the credentials were refused; keep and retry with others
    │   └── Busy                  a sqlite file another process is writing: retry within seconds
    ├── Rejected                  the store answered and refused: retrying cannot help
    └── StoreError                a tracking server's error answer (or none) to a read made
                                  without MLflow, with MLflow's error code, as its client raises
    OSError
    └── UnreadableFile            a stored file refused before or while reading it: not a
                                  regular file, over its size bound, or no answer in time
    BaseException
    ├── TrainingStopped           MLFLOW_FINGERPRINT_STOP_AFTER was reached: unwinds train() past
    │                             a user's ``except Exception``; the run ends FINISHED
    └── KeyboardInterrupt
        └── Terminated            SIGTERM or SIGHUP reached a rerun or a bisect: unwinds it as
                                  Ctrl-C does (its training ended, its worktree removed)
    UserWarning
    ├── FingerprintWarning        something the user should hear once (server unreachable,
    │                             a value refused); training goes on
    └── HeterogeneousJobWarning   the ranks of one job differ in a way that changes how the
                                  gradients are summed

``warn`` issues a warning attributed to the user's line, whatever path led to it.

Nothing here imports the rest of the package, so any layer may import it.
"""

from __future__ import annotations


class FingerprintError(ValueError):
    """A fingerprint record that cannot be read; the message is one line meant for a user."""


class ResolveError(FingerprintError):
    """An unknown run, a run without a fingerprint, an unreadable file or an unreachable store.

    A FingerprintError, so the CLI prints its message as one line and exits 2, and a Python caller
    catches bad input from ``capture``, ``Fingerprint.load`` and ``diff`` alike."""


class RefusedFile(ResolveError):
    """A run's stored file refused as input (``stored_files``: not a regular file, too large, no
    answer in time). Never taken for a missing artifact, which the run's tags may stand in for:
    a run whose record is a FIFO is refused in one line, not compared."""


class ExplainError(FingerprintError):
    """An experiment ``explain`` cannot analyse (an unknown metric, fewer than three runs with
    it, a bad ``--at`` or ``--filter``); the message is one line meant for a user."""


class ReplayError(FingerprintError):
    """An NVML recording that cannot be replayed; the message is one line meant for a user."""


class BadOverride(FingerprintError):
    """A value of ``MLFLOW_FINGERPRINT_APPLY`` or ``MLFLOW_FINGERPRINT_STOP_AFTER`` (or of a
    ``fingerprint rerun --set``) that cannot be applied: not JSON, an unknown field, a value of the
    wrong type. Raised before training; the message is one line naming the variable and field."""


class TrainingStopped(BaseException):
    """``MLFLOW_FINGERPRINT_STOP_AFTER`` was reached: a metric past that step was logged (and
    kept). A BaseException, as KeyboardInterrupt is, so that a training loop's ``except
    Exception`` does not swallow it; ``fingerprinted`` catches it, ends the run FINISHED and
    exits the process with status 0, so nothing after the loop runs on a half-trained model."""

    def __init__(self, step: int) -> None:
        super().__init__(f"stopped after step {step} (MLFLOW_FINGERPRINT_STOP_AFTER)")
        self.step = step


class Terminated(KeyboardInterrupt):
    """SIGTERM (or SIGHUP) reached a rerun or a bisect. A KeyboardInterrupt, so it unwinds the
    same way Ctrl-C does: the training's process group is ended, the worktree removed and the
    rerun's MLflow run marked KILLED on the way out."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__(f"{self.name} received")


class RunNotStarted(RuntimeError):
    """The store refused to start the run for a reason retrying cannot fix (a deleted experiment,
    a refused name): raised by the decorator before training, as MLflow's ``set_experiment``
    raises, rather than training for hours into a run that can never be stored."""


class UsageError(Exception):
    """Bad input or an unreachable store at the command line: the message is the whole story."""


class UnreadableFile(OSError):
    """A file read as input (``stored_files``) that is not a regular file (a FIFO would hold the
    reader for ever), is larger than its bound, or did not answer in time. An OSError whose
    ``strerror`` says which, so every reader's handling of a file it cannot read applies."""


class BuildFailed(UsageError):
    """An environment holding other package versions cannot be built here; the reason in one
    line. A bisect lists that difference as not settable and searches the others."""


class BadEvent(Exception):
    """A spool record of an unknown kind or without the fields of its kind (damaged, or written
    by a newer version): ``replay`` acknowledges it as refused instead of retrying for ever."""


class Unreachable(Exception):
    """The store did not answer (or answered with a server error): retry later."""


class Unauthorized(Unreachable):
    """The store refused our credentials (401/403): keep the data, retry when they are fixed (a
    rotated token, an auth gateway restarting); never a reason to drop a record."""


class Busy(Unreachable):
    """A sqlite store still locked by another process's write after MLflow's busy timeout (a
    sweep's processes sharing one file): retried within a second or two, never reported as an
    outage unless it lasts."""


class Rejected(Exception):
    """The store answered and refused the request: retrying cannot help."""


class StoreError(Exception):
    """What ``MlflowClient`` would have raised for a read that ``tracking/rest.py`` made without
    it: the server's ``CODE: message`` (or why no answer came), and the code
    (``RESOURCE_DOES_NOT_EXIST``...; empty where the server never answered)."""

    def __init__(self, message: str, error_code: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class FingerprintWarning(UserWarning):
    """Something the user should know once: the server is unreachable, a value was refused."""


class HeterogeneousJobWarning(UserWarning):
    """The ranks of one job differ in a way that changes how the gradients are summed."""


def warn(message: str, category: type[Warning] = FingerprintWarning) -> None:
    """Issue ``message`` attributed to the first frame outside this package (the user's line).

    A fixed ``stacklevel`` breaks whenever a call path gains a frame, and a warning attributed to
    one of our modules is silenced by filters meant for MLflow (``module="mlflow"`` is a prefix
    match, and ``mlflow_fingerprint`` starts with it)."""
    import sys
    import warnings

    depth, frame = 1, sys._getframe(1)
    while frame.f_back is not None and _ours(frame.f_globals.get("__name__", "")):
        frame, depth = frame.f_back, depth + 1
    warnings.warn(message, category, stacklevel=depth + 1)


def _ours(module: str) -> bool:
    return module == "mlflow_fingerprint" or module.startswith(
        ("mlflow_fingerprint.", "contextlib")
    )
