"""``fingerprinted``: one MLflow run per training, with its fingerprint, without slowing it.

At start it seeds (if asked), switches deterministic kernels on (if asked), captures the
fingerprint and queues the run's creation; MLflow itself is only ever spoken to by the run's
uploader thread (``metrics.RunWriter``), and the caller waits a bounded time for the run id.
Because train() can still change flags, the fingerprint is captured again when the first
DataLoader starts iterating (on a background thread) and, if new loaders appeared since or none
was iterated, at the end; the last capture is the run's fingerprint. Flags changed by
``deterministic=`` are restored when the run ends, as a context manager would.
"""

from __future__ import annotations

import contextvars
import functools
import json
import os
import random
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from ..capture import RunInfo, capture
from ..capture.context import DeterminismRequest
from ..capture.program import call_arguments
from ..capture.seeds import rng_state_digests
from ..model.fingerprint import Fingerprint
from ..redact import redact_text, secret_env_values, strip_url_credentials
from ..tracking import tags as tagging
from ..tracking import uploader as metrics
from ..tracking.spool import open_spool
from . import ranks
from .loaders import LoaderRecorder, find_loaders
from .seeding import (
    Determinism,
    apply_determinism,
    check_seed,
    determinism_mode,
    optional_torch,
    seed_everything,
)

F = TypeVar("F", bound=Callable[..., Any])

SEEDED_BY = "mlflow_fingerprint.fingerprinted"
CAPTURE_JOIN_S = 15.0
REMOTE_START_TIMEOUT_S = 5.0
LOCAL_START_TIMEOUT_S = 120.0

_starting: contextvars.ContextVar[bool] = contextvars.ContextVar("mfp_starting", default=False)


def wrapper_is_starting() -> bool:
    """True while ``fingerprinted`` resolves its own run's tags: the context provider stays out."""
    return _starting.get()


@contextmanager
def _provider_off() -> Iterator[None]:
    token = _starting.set(True)
    try:
        yield
    finally:
        _starting.reset(token)


def fresh_run_name() -> str:
    """An MLflow-style run name drawn from the OS. MLflow draws its names from the global
    ``random``, which ``seed=`` has just fixed, so every seeded run would get the same name."""
    rng = random.SystemRandom()
    from mlflow.utils import name_utils

    predicates = getattr(name_utils, "_GENERATOR_PREDICATES", None) or ["run"]
    nouns = getattr(name_utils, "_GENERATOR_NOUNS", None) or ["fingerprint"]
    return f"{rng.choice(predicates)}-{rng.choice(nouns)}-{rng.randint(0, 999)}".lower()


@dataclass(frozen=True)
class Options:
    """The keyword arguments of ``fingerprinted``; validated when the decorator is built, so a bad
    argument fails before training rather than in the middle of it."""

    experiment: str | None = None
    run_name: str | None = None
    seed: int | None = None
    deterministic: bool | str = False
    tracking_uri: str | None = None
    tags: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    batch_size: int | None = None
    num_workers: int | None = None
    nested: bool | None = None
    start_timeout_s: float | None = None
    flush_timeout_s: float = 30.0
    metrics: str = "rank0"
    quiet: bool = False

    def __post_init__(self) -> None:
        determinism_mode(self.deterministic)
        ranks.metric_mode(self.metrics)
        if self.seed is not None:
            check_seed(self.seed)


def _start_timeout(configured: float | None, uri: str) -> float:
    """How long the caller waits for its run id: briefly for a server (it may be down), longer
    for a local store, whose only delay is creating its database (seconds on first use)."""
    from ..tracking.client import is_remote

    if configured is not None:
        return configured
    return REMOTE_START_TIMEOUT_S if is_remote(uri) else LOCAL_START_TIMEOUT_S


def _warn(message: str) -> None:
    warnings.warn(f"mlflow-fingerprint: {message}", metrics.FingerprintWarning, stacklevel=4)


def _is_number(value: Any) -> bool:
    """A Python or numpy number, or a one-element tensor/array; not a bool."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int | float) or getattr(value, "ndim", None) == 0


def _final_metrics(result: Any) -> dict[str, float]:
    """The numbers of a returned dict; anything else in it is not a metric."""
    if not isinstance(result, Mapping):
        return {}
    return {str(k): float(v) for k, v in result.items() if _is_number(v)}


class FingerprintRun:
    """One open run: what ``with fingerprinted(...) as run`` gives (``run.run_id``,
    ``run.fingerprint``, ``run.log_metrics``, ``run.flush``)."""

    def __init__(
        self, options: Options, loaders: list[Any], call: Mapping[str, Any] | None = None
    ) -> None:
        self.options = options
        self._call = MappingProxyType(dict(call or {}))  # the decorated function's scalars
        self.fingerprint: Fingerprint | None = None
        self._initial_loaders = loaders
        self._writer: metrics.RunWriter | None = None
        self._recorder: LoaderRecorder | None = None
        self._determinism = Determinism("off", ())
        self._digests: dict[str, Any] | None = None
        self._secrets: set[str] = set()
        self._joined = False
        self._attached = False
        self._start_fp: Fingerprint | None = None
        self._published_loaders = 0
        self._recapture: threading.Thread | None = None
        self._captures: list[dict[str, Any]] = []
        self._publish_lock = threading.Lock()
        self._ranks: ranks.RankGroup | None = None  # a torchrun job: this rank and its group
        self._sink: ranks.RankMetrics | None = None  # where log_metrics goes on any rank
        self._follower_writer: metrics.RunWriter | None = None  # per_rank: into rank 0's run

    @property
    def run_id(self) -> str | None:
        """The MLflow run id; None while the tracking server has not answered (offline)."""
        return self._writer.run_id if self._writer is not None else None

    @property
    def spool_dir(self) -> Path | None:
        return self._writer.spool.path if self._writer is not None else None

    def log_metrics(self, values: Mapping[str, Any], step: int | None = None) -> None:
        if self._sink is not None:
            self._sink.log_metrics(values, step)
        elif self._writer is not None:
            self._writer.log_metrics(values, step)

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until MLflow has stored everything logged so far (e.g. before reading it back);
        False if it is unreachable or slower than ``timeout_s``."""
        return self._writer is not None and self._writer.flush(timeout_s)

    # -- start -------------------------------------------------------------------------------

    def open(self) -> FingerprintRun:
        """Seed, switch determinism, start recording loaders, then record the run's start. If
        recording fails, warn and let training go on unrecorded (seeds and flags still apply)."""
        o = self.options
        import mlflow

        if o.tracking_uri:
            mlflow.set_tracking_uri(o.tracking_uri)
        if o.seed is not None:
            seed_everything(o.seed)
            self._digests = rng_state_digests(optional_torch())
        self._determinism = apply_determinism(o.deterministic)
        self._recorder = LoaderRecorder(on_first_iter=self._first_batch).start()
        for loader in self._initial_loaders:
            self._recorder.add(loader)
        try:
            self._ranks = ranks.RankGroup.current()
        except Exception as exc:  # recorded as one process rather than not at all
            _warn(f"could not join the process group: {type(exc).__name__}: {exc}")
        if self._ranks is not None and self._ranks.rank != 0:
            self._follow(mlflow)
            return self
        try:
            self._record_start(mlflow)
        except Exception as exc:  # without a writer, close() only restores what open() changed
            _warn(f"recording the start of this run failed: {type(exc).__name__}: {exc}")
        if self._ranks is not None:
            self._lead()
        return self

    def _follow(self, mlflow: Any) -> None:
        """A non-zero rank: send its fingerprint to rank 0 and learn rank 0's run id; it never
        opens a run of its own (``metrics="per_rank"`` logs into rank 0's)."""
        assert self._ranks is not None
        try:
            self.fingerprint = capture(run=self._run_info("start"))
            self._ranks.gather(self.fingerprint.to_dict())
            run_id = self._ranks.broadcast(None)
            if self.options.metrics == "per_rank" and run_id:
                self._follower_writer = metrics.writer_for_run(run_id, mlflow.get_tracking_uri())
        except Exception as exc:  # training goes on; this rank's values are not logged
            _warn(f"rank {self._ranks.rank} could not reach rank 0: {type(exc).__name__}: {exc}")
        self._sink = ranks.RankMetrics(self._ranks, self.options.metrics, self._follower_writer)
        metrics.CURRENT.append(self._sink)  # type: ignore[arg-type]

    def _lead(self) -> None:
        """Rank 0: tell the other ranks which run to log into; route metrics by mode."""
        assert self._ranks is not None
        writer = self._writer
        try:
            self._ranks.broadcast(writer.run_id if writer is not None else None)
        except Exception as exc:
            _warn(f"could not send the run id to the other ranks: {type(exc).__name__}: {exc}")
        self._sink = ranks.RankMetrics(self._ranks, self.options.metrics, writer)
        if writer is not None and writer in metrics.CURRENT:
            metrics.CURRENT[metrics.CURRENT.index(writer)] = self._sink  # type: ignore[call-overload]
        else:
            metrics.CURRENT.append(self._sink)  # type: ignore[arg-type]

    def _gather(self, fp: Fingerprint) -> tuple[Fingerprint, list[dict[str, Any]]]:
        """Rank 0: every rank's fingerprint, merged into ``fp`` (a collective: all ranks call)."""
        assert self._ranks is not None
        merged = ranks.gather_merged(self._ranks, fp)
        assert merged is not None  # only rank 0 calls this, and rank 0 receives the records
        return merged

    def _record_start(self, mlflow: Any) -> None:
        o = self.options
        uri = mlflow.get_tracking_uri()
        self._secrets = secret_env_values()
        fp = self._start_fp = capture(run=self._run_info("start"))
        rank_records: list[dict[str, Any]] = []
        if self._ranks is not None:
            fp, rank_records = self._gather(fp)
            self._start_fp = fp
            ranks.warn_if_heterogeneous(fp)
        spool, problem = open_spool()
        start = self._start_record(mlflow, fp, uri, spool.spool_id)
        writer = self._writer = metrics.RunWriter(spool, uri).start()
        metrics.CURRENT.append(writer)
        if problem:
            writer.warn_once("disk", problem)
        writer.record(start)
        self._publish(fp, "start")
        for record, data in tagging.side_artifacts(fp, self._secrets):
            writer.record(record, data)
        for record, data in ranks.rank_artifacts(rank_records, self._secrets):
            writer.record(record, data)
        writer.drain()
        if not writer.wait_started(_start_timeout(o.start_timeout_s, uri)):
            writer.warn_offline()
        elif writer.run is not None and not self._joined:
            from ..tracking.client import fluent_attach

            self._attached = fluent_attach(writer.run)

    def _run_info(self, stage: str) -> RunInfo:
        o = self.options
        declared = {
            k: v
            for k, v in (("batch_size", o.batch_size), ("num_workers", o.num_workers))
            if v is not None
        }
        return RunInfo(
            requested_seed=o.seed,
            seeded_by=SEEDED_BY if o.seed is not None else None,
            seed_state_digests=self._digests,
            loaders=self._recorder.loaders() if self._recorder is not None else (),
            declared=declared,
            deterministic=DeterminismRequest(
                self._determinism.mode, SEEDED_BY, self._determinism.actions
            ),
            stage=stage,
            call=self._call,
        )

    def _start_record(
        self, mlflow: Any, fp: Fingerprint, uri: str, spool_id: str
    ) -> dict[str, Any]:
        """Join the active run (a run the user opened), or create a new one (nested under an
        outer ``fingerprinted`` run, or under the active run with ``nested=True``)."""
        from mlflow.tracking import fluent
        from mlflow.tracking.context.registry import resolve_tags

        from ..tracking.client import SPOOL_ID_TAG

        o = self.options
        active = mlflow.active_run()
        outer = metrics.CURRENT[-1] if metrics.CURRENT else None
        nested = o.nested
        if nested is None:
            nested = active is not None and outer is not None and outer.run_id == active.info.run_id
        if active is not None and not nested:
            self._joined = True
            return {
                "e": "start",
                "run_id": active.info.run_id,
                "tracking_uri": strip_url_credentials(uri),
            }
        user_tags = tagging.safe_tags(o.tags, self._secrets)
        run_name = o.run_name or fresh_run_name()
        own = {SPOOL_ID_TAG: spool_id, "mlflow.runName": run_name}
        if active is not None:
            own["mlflow.parentRunId"] = active.info.run_id
        with _provider_off():
            resolved = resolve_tags(
                {
                    **tagging.fingerprint_tags(fp, self._secrets),
                    **ranks.job_tags(fp),
                    **user_tags,
                    **own,
                }
            )
        # The named experiment, else the parent's (a child shows under it), else the active one.
        experiment_id = None
        if not o.experiment:
            experiment_id = (
                (active.info.experiment_id if active is not None else None)
                or getattr(fluent, "_active_experiment_id", None)
                or _env("MLFLOW_EXPERIMENT_ID")
            )
        return {
            "e": "start",
            "spool_id": spool_id,
            "experiment_name": o.experiment or _env("MLFLOW_EXPERIMENT_NAME"),
            "experiment_id": experiment_id,
            "run_name": run_name,
            "tags": resolved,
            "start_time": metrics.now_ms(),
            "tracking_uri": strip_url_credentials(uri),
        }

    # -- captures ----------------------------------------------------------------------------

    def _publish(self, fp: Fingerprint, stage: str) -> None:
        """Make ``fp`` the run's fingerprint: tags and ``fingerprint/fingerprint.json``."""
        with self._publish_lock:
            self.fingerprint = fp
            self._published_loaders = len(fp.get("data.loaders") or ())
            self._captures.append(
                {"stage": stage, "captured_at": fp.captured_at, "hashes": dict(fp.hashes)}
            )
            assert self._writer is not None
            if stage != "start" or self._joined:
                tags = {**tagging.fingerprint_tags(fp, self._secrets), **ranks.job_tags(fp)}
                self._writer.record({"e": "tags", "tags": tags})
            self._writer.record(*tagging.fingerprint_artifact(fp, self._secrets))

    def _first_batch(self) -> None:
        """Called on the training thread when the first DataLoader starts: capture off-thread."""
        if self._recapture is None and self._writer is not None:
            self._recapture = threading.Thread(
                target=self._capture_and_publish,
                args=("first_batch",),
                name="mfp-capture",
                daemon=True,
            )
            self._recapture.start()

    def _capture_and_publish(self, stage: str) -> None:
        try:
            self._publish(capture(run=self._run_info(stage)), stage)
        except Exception as exc:  # a capture problem must not reach the training thread
            _warn(f"fingerprint capture at {stage} failed: {exc}")

    # -- end ---------------------------------------------------------------------------------

    def close(self, exc: BaseException | None, result: Any = None) -> None:
        """Log the final fingerprint, params, returned metrics and status; flush; restore."""
        writer = self._writer
        try:
            if writer is not None:
                self._finish(writer, exc, result)
            elif self._ranks is not None and self._ranks.rank != 0:
                self._ranks.gather(capture(run=self._run_info("end")).to_dict())
        except Exception as error:  # never mask the user's exception or result with ours
            _warn(f"could not finish recording the run: {type(error).__name__}: {error}")
        finally:
            if self._recorder is not None:
                self._recorder.stop()
            self._determinism.undo()
            if self._sink is not None and self._sink in metrics.CURRENT:
                metrics.CURRENT.remove(self._sink)  # type: ignore[arg-type]
            # the side group goes with the user's destroy_process_group(), not with this object
            self._sink, self._ranks = None, None
            if self._follower_writer is not None:
                self._follower_writer.close(self.options.flush_timeout_s)
            if writer is not None:
                if writer in metrics.CURRENT:
                    metrics.CURRENT.remove(writer)
                if self._attached and writer.run_id:
                    from ..tracking.client import fluent_detach

                    fluent_detach(writer.run_id)
                writer.close(self.options.flush_timeout_s)
                if not self._joined:
                    _announce(writer, self.options)

    def _finish(self, writer: metrics.RunWriter, exc: BaseException | None, result: Any) -> None:
        final = _final_metrics(result)
        if final:
            writer.log_metrics(final)
        if self._recapture is not None:
            self._recapture.join(CAPTURE_JOIN_S)
        assert self._recorder is not None
        if self._recapture is None or len(self._recorder.loaders()) != self._published_loaders:
            self._capture_and_publish("end")
        fp = self.fingerprint
        assert fp is not None
        assert self._start_fp is not None
        if self._ranks is not None:
            self._finish_ranks(writer, fp)
        writer.record({"e": "params", "params": tagging.run_params(fp, self._secrets)})
        if fp.hashes.get("fingerprint") != self._start_fp.hashes.get("fingerprint"):
            # train() changed something after the start: keep what the run started with too.
            writer.record(
                *tagging.fingerprint_artifact(
                    self._start_fp, self._secrets, "fingerprint.start.json"
                )
            )
        writer.record(
            *tagging.artifact("fingerprint", "run.json", lambda: _json(self._wrapper_record()))
        )
        status = "FINISHED"
        if isinstance(exc, KeyboardInterrupt):
            status = "KILLED"
        elif exc is not None:
            status = "FAILED"
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            secrets = self._secrets
            writer.record(
                *tagging.artifact(
                    "fingerprint", "traceback.txt", lambda: redact_text(text, secrets).encode()
                )
            )
        if not self._joined:
            writer.record({"e": "end", "status": status, "end_time": metrics.now_ms()})

    def _finish_ranks(self, writer: metrics.RunWriter, fp: Fingerprint) -> None:
        """Rank 0 at the end: every rank's final fingerprint, merged and logged per rank."""
        try:
            merged, records = self._gather(fp)
        except Exception as exc:  # a rank that died: the start's gather stays the record
            _warn(f"could not gather the ranks' final fingerprints: {type(exc).__name__}: {exc}")
            return
        self._publish(merged, "end")
        for record, data in ranks.rank_artifacts(records, self._secrets):
            writer.record(record, data)

    def _wrapper_record(self) -> dict[str, Any]:
        """What the wrapper itself did: seeding, determinism switches, and every capture."""
        o = self.options
        return {
            "seed": {
                "requested": o.seed,
                "seeded_by": SEEDED_BY if o.seed is not None else None,
                "state_digests": self._digests,
            },
            "deterministic": self._determinism.record(),
            "declared": {"batch_size": o.batch_size, "num_workers": o.num_workers},
            "captures": self._captures,
        }


QUIET_ENV = "MLFLOW_FINGERPRINT_QUIET"


def _announce(writer: metrics.RunWriter, o: Options) -> None:
    """One line on stderr at the end of a run: its id, its experiment, and the command that
    compares it with the run before it, so nobody has to look the id up in the UI. Off with
    ``quiet=True`` or MLFLOW_FINGERPRINT_QUIET=1."""
    if o.quiet or os.environ.get(QUIET_ENV, "") not in ("", "0") or not writer.run_id:
        return
    import sys

    run = writer.run
    experiment = o.experiment or _env("MLFLOW_EXPERIMENT_NAME")
    if experiment is None and run is not None:
        experiment = f"id {run.info.experiment_id}"
    where = ""
    if o.tracking_uri:
        import shlex

        where = f" --tracking-uri {shlex.quote(strip_url_credentials(o.tracking_uri))}"
    print(
        f"mlflow-fingerprint: run {writer.run_id} (experiment {experiment or 'default'}); "
        f"compare with the previous run: fingerprint diff {writer.run_id}{where}",
        file=sys.stderr,
        flush=True,
    )


def _json(value: Any) -> bytes:
    return json.dumps(value, indent=2, default=str).encode()


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


class Fingerprinted:
    """What ``fingerprinted(...)`` returns: a decorator, and a context manager (re-entrant: each
    ``with`` or call opens its own run)."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self._open: list[FingerprintRun] = []

    def __call__(self, func: F) -> F:
        options = self.options

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            call = call_arguments(func, args, kwargs)
            run = FingerprintRun(options, find_loaders([*args, *kwargs.values()]), call).open()
            try:
                result = func(*args, **kwargs)
            except BaseException as exc:
                run.close(exc)
                raise
            run.close(None, result)
            return result

        return wrapper  # type: ignore[return-value]

    def __enter__(self) -> FingerprintRun:
        run = FingerprintRun(self.options, []).open()
        self._open.append(run)
        return run

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        self._open.pop().close(exc)
        return False


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
    metrics: str = "rank0",
    quiet: bool = False,
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

    ``start_timeout_s``: how long to wait for the run to be created before training goes on
    offline (default 5 s for a server, 120 s for a local store); ``flush_timeout_s``: how long the
    end of the run waits for MLflow to store everything before leaving the rest to the spool.

    Under ``torchrun`` (a process group the user initialised, or torchrun's variables, from which
    one is initialised here: gloo on CPU, nccl with CUDA) every rank captures its fingerprint and
    rank 0 logs one run holding all of them; other ranks never open a run. ``metrics``: what
    ``log_metrics`` does on the ranks: ``"rank0"`` keeps rank 0's values, ``"per_rank"`` adds the
    others' as ``<name>/rank<i>``, ``"mean"`` logs the mean over ranks (every rank must log the
    same names at the same points: it is a collective).

    ``quiet``: no closing line on stderr (the run id and the ``fingerprint diff`` command that
    compares it with the previous run); MLFLOW_FINGERPRINT_QUIET=1 does the same.
    """
    options = Options(
        experiment=experiment,
        run_name=run_name,
        seed=seed,
        deterministic=deterministic,
        tracking_uri=tracking_uri,
        tags=MappingProxyType(dict(tags or {})),
        batch_size=batch_size,
        num_workers=num_workers,
        nested=nested,
        start_timeout_s=start_timeout_s,
        flush_timeout_s=flush_timeout_s,
        metrics=metrics,
        quiet=quiet,
    )
    decorator = Fingerprinted(options)
    return decorator(func) if func is not None else decorator
