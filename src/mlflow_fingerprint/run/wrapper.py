"""``fingerprinted``: one MLflow run per training, with its fingerprint, without slowing it.

At start it seeds (if asked), switches deterministic kernels on (if asked), captures the
fingerprint and queues the run's creation; MLflow itself is only ever spoken to by the run's
uploader thread (``metrics.RunWriter``), and the caller waits a bounded time for the run id.
Because train() can still change flags, the fingerprint is captured again when the first
DataLoader starts iterating (on a background thread) and, if the loaders moved on since (new ones,
more batches) or none was iterated, at the end; the last capture is the run's fingerprint. Flags
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

import contextvars
import functools
import json
import os
import random
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from .. import layout
from ..capture import RunInfo, capture
from ..capture.context import DeterminismRequest
from ..capture.program import call_arguments
from ..capture.seeds import rng_state_digests
from ..errors import BadOverride, RunNotStarted, TrainingStopped, warn
from ..model.fingerprint import Fingerprint
from ..model.vocabulary import MetricsMode
from ..redact import redact_text, secret_env_values, strip_url_credentials
from ..settings import settings
from ..tracking import tags as tagging
from ..tracking import uploader as metrics
from ..tracking.events import CreateRun, End, JoinRun, Status, Tags
from ..tracking.spool import open_spool
from ..tracking.values import storable
from . import current, publish, ranks
from .apply import (
    Applied,
    LoaderOverrides,
    Overrides,
    apply_environment,
    apply_switches,
    forced_deterministic,
    forced_seed,
    overrides_from_env,
    stop_after_from_env,
)
from .loaders import LoaderRecorder, find_loaders
from .provider_pause import pause_provider
from .seeding import (
    Determinism,
    apply_determinism,
    check_seed,
    determinism_mode,
    optional_torch,
    seed_everything,
)
from .stop import StoppingSink

F = TypeVar("F", bound=Callable[..., Any])

SEEDED_BY = "mlflow_fingerprint.fingerprinted"
CAPTURE_JOIN_S = 15.0
REMOTE_START_TIMEOUT_S = 5.0
LOCAL_START_TIMEOUT_S = 120.0


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
    metrics: MetricsMode = "rank0"
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
    warn(f"mlflow-fingerprint: {message}")


def _final_metrics(result: Any) -> dict[str, float]:
    """The storable numbers of a returned dict (``tracking.values.storable``); anything else in it
    (a string, an array of text, a complex number, a number too large for a float) is not a
    metric and is left out without a word: a returned dict is not only metrics."""
    if not isinstance(result, Mapping):
        return {}
    return dict(storable(result, None).values)


@dataclass(frozen=True)
class _Forced:
    """A controlled rerun's requests (``apply``): the values forced on the run, what forcing
    them changed in the process (undone at the end), and the step to stop after."""

    overrides: Overrides = field(default_factory=Overrides)
    environment: Applied = field(default_factory=Applied)
    switches: Applied = field(default_factory=Applied)
    stop_after: int | None = None

    def record(self) -> dict[str, Any]:
        return {
            "overrides": dict(self.overrides.values),
            "actions": [*self.environment.actions, *self.switches.actions],
            "stop_after": self.stop_after,
        }


def _requested() -> tuple[Overrides, int | None]:
    """MLFLOW_FINGERPRINT_APPLY and _STOP_AFTER; a bad value ends the program before training
    with one line on stderr (exit 2), as a bad command line would: a rerun that went on without
    its settings would train for nothing and report a comparison of the wrong thing."""
    try:
        return overrides_from_env(), stop_after_from_env()
    except BadOverride as exc:
        print(f"mlflow-fingerprint: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


@dataclass(frozen=True)
class _Prepared:
    """What ``open`` did before recording anything: the loaders it watches, the determinism
    switches (undone at the end), the RNG state digests right after seeding, and a rerun's
    forced values."""

    recorder: LoaderRecorder
    determinism: Determinism
    digests: dict[str, Any] | None
    forced: _Forced = field(default_factory=_Forced)

    def undo(self) -> None:
        """Stop watching loaders and put the process switches back, last set first."""
        self.recorder.stop()
        self.forced.switches.undo()
        self.determinism.undo()
        self.forced.environment.undo()


@dataclass
class _Recording:
    """This process's side of the MLflow run: its writer (built from the run's own URI), the
    secrets to redact, and how the run relates to MLflow's fluent API."""

    writer: metrics.RunWriter
    uri: str
    secrets: set[str]
    joined: bool  # logging into a run the user opened: its tags and end are the user's
    start_fp: Fingerprint
    attached: bool = False  # on this thread's fluent stack: mlflow.log_* inside train() land here


@dataclass
class _Captures:
    """The fingerprints taken during the run: the last one is the run's (``publish``)."""

    fingerprint: Fingerprint | None = None
    published_loaders: tuple[Any, ...] = ()  # the loaders (and their batch counts) published
    stages: list[dict[str, Any]] = field(default_factory=list)
    recapture: threading.Thread | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class _Job:
    """A torchrun job: this rank, where its ``log_metrics`` go, and (``per_rank`` on a non-zero
    rank) its writer into rank 0's run."""

    ranks: ranks.RankGroup
    sink: ranks.RankMetrics
    follower_writer: metrics.RunWriter | None = None


class FingerprintRun:
    """One open run: what ``with fingerprinted(...) as run`` gives (``run.run_id``,
    ``run.fingerprint``, ``run.log_metrics``, ``run.flush``)."""

    def __init__(
        self, options: Options, loaders: list[Any], call: Mapping[str, Any] | None = None
    ) -> None:
        self.options = options
        self._loaders = loaders
        self._call = MappingProxyType(dict(call or {}))  # the decorated function's scalars
        self._prep: _Prepared | None = None
        self._rec: _Recording | None = None
        self._captures = _Captures()
        self._job: _Job | None = None
        self._current = ExitStack()  # this run as the calling context's current run
        self._stopping: StoppingSink | None = None  # the sink, under MLFLOW_FINGERPRINT_STOP_AFTER
        self._stopped_at: int | None = None

    @property
    def fingerprint(self) -> Fingerprint | None:
        """The run's fingerprint: the last one captured (the start's until train() iterates)."""
        return self._captures.fingerprint

    @property
    def _writer(self) -> metrics.RunWriter | None:
        return self._rec.writer if self._rec is not None else None

    @property
    def run_id(self) -> str | None:
        """The MLflow run id; None while the tracking server has not answered (offline)."""
        return self._writer.run_id if self._writer is not None else None

    @property
    def spool_dir(self) -> Path | None:
        return self._writer.spool.path if self._writer is not None else None

    def log_metrics(self, values: Mapping[str, Any], step: int | None = None) -> None:
        sink = self._sink()
        if sink is not None:
            sink.log_metrics(values, step)

    def _sink(self) -> current.MetricSink | None:
        sink = self._job.sink if self._job is not None else self._writer
        prep = self._prep
        if sink is None or prep is None or prep.forced.stop_after is None:
            return sink
        if self._stopping is None or self._stopping.inner is not sink:
            self._stopping = StoppingSink(sink, prep.forced.stop_after)
        return self._stopping

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until MLflow has stored everything logged so far (e.g. before reading it back);
        False if it is unreachable or slower than ``timeout_s``."""
        return self._writer is not None and self._writer.flush(timeout_s)

    # -- start -------------------------------------------------------------------------------

    def open(self) -> FingerprintRun:
        """Seed, switch determinism, start recording loaders, then record the run's start. If
        recording fails, warn and let training go on unrecorded (seeds and flags still apply).

        The run's store is ``tracking_uri=``, else MLflow's tracking URI as it is now; neither
        MLflow's global URI nor the environment is changed."""
        overrides, stop_after = _requested()
        if overrides.values:  # the forced seed and determinism act as the arguments would
            self.options = replace(
                self.options,
                seed=forced_seed(overrides, self.options.seed),
                deterministic=forced_deterministic(overrides, self.options.deterministic),
            )
        o = self.options
        import mlflow

        uri = o.tracking_uri or mlflow.get_tracking_uri()
        environment = apply_environment(overrides)
        digests = None
        if o.seed is not None:
            seed_everything(o.seed)
            digests = rng_state_digests(optional_torch())
        determinism = apply_determinism(o.deterministic)
        forced = _Forced(overrides, environment, apply_switches(overrides), stop_after)
        adjust = LoaderOverrides(overrides).adjust if overrides.touches_loaders() else None
        recorder = LoaderRecorder(on_first_iter=self._first_batch, adjust=adjust).start()
        self._prep = _Prepared(recorder, determinism, digests, forced)
        for loader in self._loaders:
            recorder.add(loader)
        group = None
        try:
            group = ranks.RankGroup.current()
        except Exception as exc:  # recorded as one process rather than not at all
            _warn(f"could not join the process group: {type(exc).__name__}: {exc}")
        if group is not None and group.rank != 0:
            self._follow(group, uri)
        else:
            try:
                self._record_start(mlflow, uri, group)
            except RunNotStarted:
                self._prep.undo()
                raise
            except Exception as exc:  # without a writer, close() only restores what open() did
                _warn(f"recording the start of this run failed: {type(exc).__name__}: {exc}")
            if group is not None:
                self._lead(group)
        sink = self._sink()
        if sink is not None:
            self._current.enter_context(current.entered(sink))
        return self

    def _follow(self, group: ranks.RankGroup, uri: str) -> None:
        """A non-zero rank: send its fingerprint to rank 0 and learn rank 0's run id; it never
        opens a run of its own (``metrics="per_rank"`` logs into rank 0's)."""
        follower = None
        try:
            self._captures.fingerprint = capture(run=self._run_info("start"))
            group.gather(self._captures.fingerprint.to_dict())
            run_id = group.broadcast(None)
            if self.options.metrics == "per_rank" and run_id:
                follower = metrics.writer_for_run(run_id, uri)
        except Exception as exc:  # training goes on; this rank's values are not logged
            _warn(f"rank {group.rank} could not reach rank 0: {type(exc).__name__}: {exc}")
        sink = ranks.RankMetrics(group, self.options.metrics, follower)
        self._job = _Job(group, sink, follower)

    def _lead(self, group: ranks.RankGroup) -> None:
        """Rank 0: tell the other ranks which run to log into; route metrics by mode."""
        writer = self._writer
        try:
            group.broadcast(writer.run_id if writer is not None else None)
        except Exception as exc:
            _warn(f"could not send the run id to the other ranks: {type(exc).__name__}: {exc}")
        self._job = _Job(group, ranks.RankMetrics(group, self.options.metrics, writer))

    def _record_start(self, mlflow: Any, uri: str, group: ranks.RankGroup | None) -> None:
        o = self.options
        secrets = secret_env_values()
        fp = capture(run=self._run_info("start"))
        rank_records: list[dict[str, Any]] = []
        if group is not None:
            merged = ranks.gather_merged(group, fp)
            assert merged is not None  # rank 0 receives the records
            fp, rank_records = merged
            ranks.warn_if_heterogeneous(fp)
        spool, problem = open_spool()
        start = self._start_event(mlflow, fp, uri, spool.spool_id, secrets)
        writer = metrics.RunWriter(spool, uri).start()
        rec = self._rec = _Recording(writer, uri, secrets, isinstance(start, JoinRun), fp)
        if problem:
            writer.warn_once("disk", problem)
        writer.record(start)
        overrides = self._prep.forced.overrides if self._prep is not None else Overrides()
        if overrides.values:
            writer.record(Tags({layout.TAG_OVERRIDES: redact_text(overrides.canonical(), secrets)}))
        self._publish(fp, "start")
        writer.drain()
        if not writer.wait_started(_start_timeout(o.start_timeout_s, uri)):
            stuck = writer.stuck  # read once: the uploader may clear it as the writer stops
            if stuck is not None:  # e.g. a deleted experiment: say so before training
                self._rec = None
                writer.discard()
                raise RunNotStarted(f"mlflow-fingerprint: the run cannot start: {stuck}")
            writer.warn_offline()
        elif writer.run is not None and not rec.joined:
            rec.attached = self._attach(mlflow, writer.run, uri)

        # Made on the spool thread once the run exists: reading and scanning a large diff must
        # neither block the caller nor compete with the run's creation.
        publish.to_writer(
            writer,
            [*tagging.side_artifacts(fp, secrets), *ranks.rank_artifacts(rank_records, secrets)],
        )

    def _attach(self, mlflow: Any, run: Any, uri: str) -> bool:
        """Put the run on this thread's fluent stack, so the user's ``mlflow.log_*`` calls in
        train() land in it: only where MLflow's fluent API talks to the run's store. With
        ``tracking_uri=`` naming another store, those calls would go to the process's tracking
        URI instead (where this run does not exist), so the run is not attached and we say so."""
        from ..tracking.client import fluent_attach

        if mlflow.get_tracking_uri() != uri:
            _warn(
                f"this run logs to {strip_url_credentials(uri)}, not to MLflow's tracking URI "
                f"{strip_url_credentials(mlflow.get_tracking_uri())}: mlflow.log_* calls in "
                "train() do not go to it (mlflow_fingerprint.log_metrics and run.log_metrics do)"
            )
            return False
        return fluent_attach(run)

    def _run_info(self, stage: str) -> RunInfo:
        o = self.options
        prep = self._prep
        declared = {
            k: v
            for k, v in (("batch_size", o.batch_size), ("num_workers", o.num_workers))
            if v is not None
        }
        determinism = prep.determinism if prep is not None else Determinism("off", ())
        return RunInfo(
            requested_seed=o.seed,
            seeded_by=SEEDED_BY if o.seed is not None else None,
            seed_state_digests=prep.digests if prep is not None else None,
            loaders=prep.recorder.loaders() if prep is not None else (),
            declared=declared,
            deterministic=DeterminismRequest(determinism.mode, SEEDED_BY, determinism.actions),
            stage=stage,
            call=self._call,
        )

    def _start_event(
        self, mlflow: Any, fp: Fingerprint, uri: str, spool_id: str, secrets: set[str]
    ) -> JoinRun | CreateRun:
        """Join the active run (a run the user opened), or create a new one (nested under an
        outer ``fingerprinted`` run, or under the active run with ``nested=True``)."""
        from mlflow.tracking import fluent
        from mlflow.tracking.context.registry import resolve_tags

        o = self.options
        active = mlflow.active_run()
        outer = current.current()
        nested = o.nested
        if nested is None:
            nested = active is not None and outer is not None and outer.run_id == active.info.run_id
        if active is not None and not nested:
            return JoinRun(active.info.run_id, strip_url_credentials(uri))
        run_name = o.run_name or fresh_run_name()
        own = {
            layout.INTERNAL_SPOOL_ID: spool_id,
            layout.MLFLOW_RUN_NAME: run_name,
            **rerun_tags(os.environ),
        }
        if active is not None:
            own[layout.MLFLOW_PARENT_RUN_ID] = active.info.run_id
        with pause_provider():
            resolved = resolve_tags({**publish.run_tags(fp, secrets, o.tags), **own})
        # The named experiment, else the parent's (a child shows under it), else the active one.
        experiment_id = None
        if not o.experiment:
            experiment_id = (
                (active.info.experiment_id if active is not None else None)
                or getattr(fluent, "_active_experiment_id", None)
                or _env("MLFLOW_EXPERIMENT_ID")
            )
        return CreateRun(
            spool_id=spool_id,
            experiment_name=o.experiment or _env("MLFLOW_EXPERIMENT_NAME"),
            experiment_id=experiment_id,
            run_name=run_name,
            tags=resolved,
            start_time=metrics.now_ms(),
            tracking_uri=strip_url_credentials(uri),
        )

    # -- captures ----------------------------------------------------------------------------

    def _publish(
        self, fp: Fingerprint, stage: str, rank_records: Sequence[Mapping[str, Any]] = ()
    ) -> None:
        """Make ``fp`` the run's fingerprint: its tags (already in the run's creation at the
        start of a run made here), ``fingerprint/fingerprint.json``, and every rank's fingerprint
        given. The side artifacts (package list, diff) are queued once the run exists."""
        rec = self._rec
        assert rec is not None
        caps = self._captures
        with caps.lock:
            caps.fingerprint = fp
            caps.published_loaders = tuple(fp.get("data.loaders") or ())
            caps.stages.append(
                {"stage": stage, "captured_at": fp.captured_at, "hashes": dict(fp.hashes)}
            )
            items = publish.fingerprint_items(
                fp,
                rec.secrets,
                tags=stage != "start" or rec.joined,
                side=False,
                rank_records=rank_records,
            )
            publish.to_writer(rec.writer, items)

    def _first_batch(self) -> None:
        """Called on the training thread when the first DataLoader starts: capture off-thread,
        in a copy of the training thread's context. torch keeps user overrides of its config
        (inductor's ``deterministic``, set by ``use_deterministic_algorithms``) per thread in
        ContextVars, so a plain background thread would read the defaults instead."""
        caps = self._captures
        if caps.recapture is None and self._rec is not None:
            caps.recapture = threading.Thread(
                target=contextvars.copy_context().run,
                args=(self._capture_and_publish, "first_batch"),
                name="mfp-capture",
                daemon=True,
            )
            caps.recapture.start()

    def _capture_and_publish(self, stage: str) -> None:
        try:
            self._publish(capture(run=self._run_info(stage)), stage)
        except Exception as exc:  # a capture problem must not reach the training thread
            _warn(f"fingerprint capture at {stage} failed: {exc}")

    # -- end ---------------------------------------------------------------------------------

    def close(self, exc: BaseException | None, result: Any = None) -> None:
        """Log the final fingerprint, params, returned metrics and status; flush; restore. A
        ``TrainingStopped`` is no failure: the run ends FINISHED, tagged with its step."""
        if isinstance(exc, TrainingStopped):
            self._stopped_at, exc = exc.step, None
        rec, job, prep = self._rec, self._job, self._prep
        try:
            if rec is not None:
                self._finish(rec, exc, result)
            elif job is not None and job.ranks.rank != 0:
                job.ranks.gather(capture(run=self._run_info("end")).to_dict())
        except Exception as error:  # never mask the user's exception or result with ours
            _warn(f"could not finish recording the run: {type(error).__name__}: {error}")
        finally:
            if prep is not None:
                prep.undo()
            self._current.close()
            # the side group goes with the user's destroy_process_group(), not with this object
            self._job = None
            if job is not None and job.follower_writer is not None:
                job.follower_writer.close(self.options.flush_timeout_s)
            if rec is not None:
                if rec.attached and rec.writer.run_id:
                    from ..tracking.client import fluent_detach

                    fluent_detach(rec.writer.run_id)
                rec.writer.close(self.options.flush_timeout_s)
                if not rec.joined:
                    _announce(rec.writer, self.options)

    def _finish(self, rec: _Recording, exc: BaseException | None, result: Any) -> None:
        """Record what the run ended with, then its end: whatever fails in the first part (a
        capture, a value that cannot be stored), the run still ends FINISHED/FAILED/KILLED."""
        try:
            self._finish_records(rec, result)
        except Exception as error:
            _warn(f"could not record the end of the run: {type(error).__name__}: {error}")
        finally:
            self._finish_status(rec, exc)

    def _finish_records(self, rec: _Recording, result: Any) -> None:
        writer = rec.writer
        final = _final_metrics(result)
        if final:
            writer.log_metrics(final)
        caps = self._captures
        if caps.recapture is not None:
            caps.recapture.join(CAPTURE_JOIN_S)
        assert self._prep is not None
        if caps.recapture is None or tuple(self._prep.recorder.loaders()) != caps.published_loaders:
            self._capture_and_publish("end")
        fp = caps.fingerprint
        assert fp is not None
        if self._job is not None:
            self._finish_ranks(fp)
        publish.to_writer(writer, [publish.params_item(fp, rec.secrets)])
        if fp.hashes.get("fingerprint") != rec.start_fp.hashes.get("fingerprint"):
            # train() changed something after the start: keep what the run started with too.
            writer.record(
                *tagging.fingerprint_artifact(rec.start_fp, rec.secrets, layout.START_FILE)
            )
        writer.record(
            *tagging.artifact(
                layout.ARTIFACT_DIR, layout.RUN_FILE, lambda: _json(self._wrapper_record())
            )
        )

    def _finish_status(self, rec: _Recording, exc: BaseException | None) -> None:
        writer = rec.writer
        status: Status = "FINISHED"
        if isinstance(exc, KeyboardInterrupt):
            status = "KILLED"
        elif exc is not None:
            status = "FAILED"
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            secrets = rec.secrets
            writer.record(
                *tagging.artifact(
                    layout.ARTIFACT_DIR,
                    layout.TRACEBACK_FILE,
                    lambda: redact_text(text, secrets).encode(),
                )
            )
        if self._stopped_at is not None:
            writer.record(Tags({layout.TAG_STOPPED_AT: str(self._stopped_at)}))
        if not rec.joined:
            writer.record(End(status, metrics.now_ms()))

    def _finish_ranks(self, fp: Fingerprint) -> None:
        """Rank 0 at the end: every rank's final fingerprint, merged and logged per rank."""
        assert self._job is not None
        try:
            merged = ranks.gather_merged(self._job.ranks, fp)
            assert merged is not None  # rank 0 receives the records
        except Exception as exc:  # a rank that died: the start's gather stays the record
            _warn(f"could not gather the ranks' final fingerprints: {type(exc).__name__}: {exc}")
            return
        self._publish(merged[0], "end", merged[1])

    def _wrapper_record(self) -> dict[str, Any]:
        """What the wrapper itself did: seeding, determinism switches, and every capture."""
        o = self.options
        prep = self._prep
        determinism = prep.determinism if prep is not None else Determinism("off", ())
        return {
            "seed": {
                "requested": o.seed,
                "seeded_by": SEEDED_BY if o.seed is not None else None,
                "state_digests": prep.digests if prep is not None else None,
            },
            "deterministic": determinism.record(),
            "declared": {"batch_size": o.batch_size, "num_workers": o.num_workers},
            "captures": self._captures.stages,
            "rerun": self._rerun_record(),
        }

    def _rerun_record(self) -> dict[str, Any]:
        """What a controlled rerun forced and where it stopped; the forced environment values
        pass the run's redaction, as the ``fingerprint.overrides`` tag does."""
        prep, rec = self._prep, self._rec
        record = {
            **(prep.forced if prep is not None else _Forced()).record(),
            "stopped_at": self._stopped_at,
        }
        if rec is None or not record["overrides"]:
            return record
        redacted: dict[str, Any] = json.loads(redact_text(json.dumps(record), rec.secrets))
        return redacted


def _announce(writer: metrics.RunWriter, o: Options) -> None:
    """One line on stderr at the end of a run: its id, its experiment, and the command that
    compares it with the run before it, so nobody has to look the id up in the UI. Off with
    ``quiet=True`` or MLFLOW_FINGERPRINT_QUIET=1."""
    if o.quiet or settings().quiet or not writer.run_id:
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


def rerun_tags(environ: Mapping[str, str]) -> dict[str, str]:
    """The tags ``fingerprint rerun`` asks for through the environment of the training it starts:
    which run this one repeats, and the token it finds this run by."""
    from .. import settings

    pairs = (
        (layout.TAG_RERUN_OF, environ.get(settings.RERUN_OF)),
        (layout.INTERNAL_RERUN_TOKEN, environ.get(settings.RERUN_TOKEN)),
    )
    return {tag: value for tag, value in pairs if value}


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
        run = FingerprintRun(self.options, []).open()
        self._open.append(run)
        return run

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
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

    Controlled reruns (``fingerprint rerun``), read when the run opens: MLFLOW_FINGERPRINT_APPLY,
    a JSON object of fingerprint fields and values (``{"seeds.requested": 0,
    "data.num_workers": 2}``; ``run.apply.SETTABLE_FIELDS``), forces them on the run (the seed
    and determinism as ``seed=``/``deterministic=`` would) and tags it ``fingerprint.overrides``;
    MLFLOW_FINGERPRINT_STOP_AFTER=N ends the run FINISHED once a metric with a step past N is
    logged, tags it ``fingerprint.stopped_at`` and exits the process with status 0. A bad value
    of either stops the program before training, with one line on stderr (exit status 2).
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
