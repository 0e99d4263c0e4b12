"""``fingerprinted``: one MLflow run per training, with its fingerprint, without slowing it; the
public decorator and context manager. Each call or ``with`` opens its own run
(``lifecycle.FingerprintRun``), which does the work.

At start it seeds (if asked), switches deterministic kernels on (if asked), captures the
fingerprint and queues the run's creation; the caller waits a bounded time for the run id. Flags
changed by ``deterministic=`` are restored when the run ends, as a context manager would.

A controlled rerun (``apply``) forces field values through MLFLOW_FINGERPRINT_APPLY: the seed and
``deterministic`` as if they were the decorator's own arguments, the other switches around them,
and DataLoaders as they are described; MLFLOW_FINGERPRINT_STOP_AFTER ends the run FINISHED once a
metric past that step is logged (``stop``), and then the process, with status 0.

A run's state is its own: a writer built from its own tracking URI (MLflow's global URI and the
environment are never changed), its place as the current run of the calling context while
train() runs (``current``, where ``log_metrics`` looks), and what it writes into MLflow goes
through the one publish path (``publish``) the trainer callbacks and the context provider take.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

from ..capture.options import find as find_options
from ..capture.options import from_value
from ..capture.program import call_arguments
from ..errors import TrainingStopped
from ..model.vocabulary import MetricsMode
from . import current
from .lifecycle import FingerprintRun
from .loaders import find_loaders
from .options import FingerprintOptions

F = TypeVar("F", bound=Callable[..., Any])


class Fingerprinted:
    """What ``fingerprinted(...)`` returns: a decorator, and a context manager (re-entrant: each
    ``with`` or call opens its own run)."""

    def __init__(self, options: FingerprintOptions) -> None:
        self.options = options
        self._open: list[FingerprintRun] = []

    def __call__(self, func: F) -> F:
        options = self.options

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            call = call_arguments(func, args, kwargs)
            values = [*args, *kwargs.values()]
            found = (
                None
                if options.program_options is not None
                else find_options(sys._getframe(1), values)
            )
            run = FingerprintRun(options, find_loaders(values), call, found).open()
            try:
                result = func(*args, **kwargs)
            except TrainingStopped as stop:
                run.close(stop)
                _leave_stopped(stop)
            except BaseException as exc:
                run.close(exc)
                raise
            run.close(None, result)
            return result

        return wrapper  # type: ignore[return-value]

    def __enter__(self) -> FingerprintRun:
        found = None if self.options.program_options is not None else find_options(sys._getframe(1))
        run = FingerprintRun(self.options, [], None, found).open()
        self._open.append(run)
        return run

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Literal[False]:
        self._open.pop().close(exc)
        if isinstance(exc, TrainingStopped):
            _leave_stopped(exc)
        return False


def _leave_stopped(stop: TrainingStopped) -> None:
    """After a run stopped by MLFLOW_FINGERPRINT_STOP_AFTER has ended: an outer ``fingerprinted``
    run ends stopped too (the stop unwinds on), else the process exits with status 0, so the
    code after the training (an evaluation, a saved model) never runs on a half-trained model."""
    if current.current() is not None:
        raise stop
    raise SystemExit(0)


def fingerprinted(
    func: Callable[..., Any] | None = None,
    *,
    experiment: str | None = None,
    run_name: str | None = None,
    seed: int | None = None,
    deterministic: bool | str = False,
    tracking_uri: str | None = None,
    tags: Mapping[str, Any] | None = None,
    batch_size: int | None = None,
    num_workers: int | None = None,
    nested: bool | None = None,
    start_timeout_s: float | None = None,
    flush_timeout_s: float = 30.0,
    metrics: MetricsMode = "rank0",
    quiet: bool = False,
    options: Any = None,
) -> Any:
    """Record a training function (``@fingerprinted(...)``, or bare ``@fingerprinted``) or a block
    (``with fingerprinted(...) as run:``) as one MLflow run with its fingerprint.

    ``seed``: seed python, numpy and torch with it (None: do not seed; what the RNGs hold is
    recorded either way). ``deterministic``: True or "warn" turns cuDNN autotuning off and
    deterministic kernels on for the run. ``batch_size``/``num_workers``: declared values, for
    loaders the wrapper cannot see. ``nested``: None joins a run the user opened and nests under
    an outer ``fingerprinted`` run; True always nests, False always joins. A returned dict of
    numbers is logged as final metrics; the run ends FINISHED, FAILED (the exception is re-raised,
    its traceback kept as an artifact) or KILLED (KeyboardInterrupt).

    ``tracking_uri``: the run's store (default: MLflow's tracking URI at the start of the run). It
    is the run's alone: MLflow's tracking URI and the environment are left as they are, so two
    runs in two threads may log to two stores. The run is made this thread's active MLflow run
    (``mlflow.log_param`` inside train() lands in it) only where MLflow's URI is the run's; with
    another store, a warning says that ``mlflow.log_*`` calls would go elsewhere. ``log_metrics``
    (``mfp.log_metrics``) logs into the run of the calling context (see ``run.current``).

    ``start_timeout_s``: how long to wait for the run to be created before training goes on
    offline (default 5 s for a server, 30 s in all for one that answers but is busy, 120 s for a
    local store); ``flush_timeout_s``: how long the
    end of the run waits for MLflow to store everything before leaving the rest to the spool.

    Under ``torchrun`` (a process group the user initialised, or torchrun's variables, from which
    one is initialised here: gloo on CPU, nccl with CUDA) every rank captures its fingerprint and
    rank 0 logs one run holding all of them; other ranks never open a run. ``metrics``: what
    ``log_metrics`` does on the ranks: ``"rank0"`` keeps rank 0's values, ``"per_rank"`` adds the
    others' as ``<name>/rank<i>``, ``"mean"`` logs the mean over ranks (every rank must log the
    same names at the same points: it is a collective).

    ``options``: the program's options as it saw them, defaults included (``vars(args)``, an
    ``argparse.Namespace``, a dataclass, a mapping or an OmegaConf config), recorded as
    ``program.options``. Without it they are looked for: click's (and typer's) current context,
    else the argparse ``Namespace`` and ``ArgumentParser`` among the callers' variables, else an
    OmegaConf config (Hydra); else the command line as typed (``capture/options.py``).

    ``quiet``: no closing line on stderr (the run id and the ``fingerprint diff`` command that
    compares it with the previous run); MLFLOW_FINGERPRINT_QUIET=1 does the same.

    Controlled reruns (``fingerprint rerun``), read when the run opens: MLFLOW_FINGERPRINT_APPLY,
    a JSON object of fingerprint fields and values (``{"seeds.requested": 0,
    "data.num_workers": 2}``; ``run.apply.SETTABLE_FIELDS``), forces them on the run (the seed
    and determinism as ``seed=``/``deterministic=`` would) and tags it ``fingerprint.overrides``;
    MLFLOW_FINGERPRINT_STOP_AFTER=N ends the run FINISHED once a metric with a step past N is
    logged, tags it ``fingerprint.stopped_at`` and exits the process with status 0. A bad value
    of either stops the program before training, with one line on stderr (exit status 2).
    """
    options = FingerprintOptions(
        experiment=experiment,
        run_name=run_name,
        seed=seed,
        deterministic=deterministic,
        tracking_uri=tracking_uri,
        tags=tags or {},
        batch_size=batch_size,
        num_workers=num_workers,
        nested=nested,
        start_timeout_s=start_timeout_s,
        flush_timeout_s=flush_timeout_s,
        metrics=metrics,
        quiet=quiet,
        program_options=from_value(options) if options is not None else None,
    )
    decorator = Fingerprinted(options)
    return decorator(func) if func is not None else decorator
