"""``FingerprintRun``: one run from open to close, the object ``with fingerprinted(...) as run``
gives. It orders the parts: prepare the process (``prepare``), record the start through the
run's writer (``start``), take part in a torchrun job (``ranks``), make each new capture the run's
fingerprint (``publish``), and at the end record what the run ended with and its status, then put
the process back and print the closing line (``announce``).

MLflow itself is only ever spoken to by the run's uploader thread (``uploader.RunWriter``), and
the caller waits a bounded time for the run id. Because train() can still change flags, the
fingerprint is captured again when the first DataLoader starts iterating (on a background thread)
and, if the loaders moved on since (new ones, more batches) or none was iterated, at the end; the
last capture is the run's fingerprint.
"""

from __future__ import annotations

import contextvars
import json
import threading
import traceback
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .. import layout
from ..capture import RunInfo, capture
from ..capture.options import FoundOptions
from ..errors import ResolveError, RunNotStarted, TrainingStopped, warn
from ..model.fields import DATA_LOADERS, FIRST_STEP_RECORDED_BY
from ..model.fingerprint import Fingerprint
from ..redact import redact_text, secret_env_values
from ..tracking import tags as tagging
from ..tracking import uploader
from ..tracking.credentials import refuse_raw_password
from ..tracking.events import End, JoinRun, Status, Tags
from ..tracking.spool import open_spool
from ..tracking.values import storable
from . import current, publish, ranks
from .announce import announce
from .apply import Overrides
from .decorator_record import decorator_record, run_info
from .options import FingerprintOptions
from .prepare import Prepared, prepare, rerun_requests, with_forced
from .ranks import RankGroup, RankMetrics
from .start import attach, start_event, start_timeout
from .started import FirstUse, Started, started_now
from .stop import StoppingSink

if TYPE_CHECKING:
    from ..tracking.client import NestingHook

CAPTURE_JOIN_S = 15.0


@dataclass
class _Recording:
    """This process's side of the MLflow run: its writer (built from the run's own URI), the
    secrets to redact, and how the run relates to MLflow's fluent API."""

    writer: uploader.RunWriter
    uri: str
    secrets: set[str]
    joined: bool  # logging into a run the user opened: its tags and end are the user's
    start_fp: Fingerprint
    # on this thread's fluent stack (mlflow.log_* inside train() land here), with the hook that
    # nests a plain mlflow.start_run() under it; taken off when the run ends
    attached: NestingHook | None = None


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

    # the classes by name: in this class body ``ranks`` is the field, not the module
    ranks: RankGroup
    sink: RankMetrics
    follower_writer: uploader.RunWriter | None = None


class FingerprintRun:
    """One open run: what ``with fingerprinted(...) as run`` gives (``run.run_id``,
    ``run.fingerprint``, ``run.log_metrics``, ``run.flush``)."""

    def __init__(
        self,
        options: FingerprintOptions,
        loaders: list[Any],
        call: Mapping[str, Any] | None = None,
        program_options: FoundOptions | None = None,
    ) -> None:
        self.options = options
        self._loaders = loaders
        self._call = MappingProxyType(dict(call or {}))  # the decorated function's scalars
        # The program's options with their defaults: given (``options=``) or found on the
        # thread that opened the run (``capture/options.py``).
        self._program_options = (
            FoundOptions("decorator", options.program_options)
            if options.program_options is not None
            else program_options
        )
        self._started: Started | None = None  # read on the training thread at its first step
        self._prep: Prepared | None = None
        self._rec: _Recording | None = None
        self._captures = _Captures()
        self._job: _Job | None = None
        self._current = ExitStack()  # this run as the calling context's current run
        self._stopping: StoppingSink | None = None  # the sink, under MLFLOW_FINGERPRINT_STOP_AFTER
        self._first_metric: FirstUse | None = None  # the sink, telling the first metric
        self._stopped_at: int | None = None

    @property
    def fingerprint(self) -> Fingerprint | None:
        """The run's fingerprint: the last one captured (the start's until train() iterates)."""
        return self._captures.fingerprint

    @property
    def _writer(self) -> uploader.RunWriter | None:
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
        sink: current.MetricSink | None = self._job.sink if self._job is not None else self._writer
        prep = self._prep
        if sink is None:
            return None
        if prep is not None and prep.forced.stop_after is not None:
            if self._stopping is None or self._stopping.inner is not sink:
                self._stopping = StoppingSink(sink, prep.forced.stop_after)
            sink = self._stopping
        if self._first_metric is None or self._first_metric.inner is not sink:
            self._first_metric = FirstUse(sink, self._training_started)
        return self._first_metric

    def _training_started(self, stage: str = "first_metric") -> Started:
        """Once, on the training thread, as training starts (its first DataLoader iterator or
        its first logged metric): the RNGs after the program's own seeding, and what frameworks
        keep per thread; every capture from then on is told them."""
        if self._started is None:
            self._started = started_now(stage)
        return self._started

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
        overrides, stop_after = rerun_requests()
        self.options = with_forced(self.options, overrides)
        o = self.options
        import mlflow

        uri = o.tracking_uri or mlflow.get_tracking_uri()
        self._prep = prepare(o, overrides, stop_after, self._first_batch)
        for loader in self._loaders:
            self._prep.recorder.add(loader)
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
                follower = uploader.writer_for_run(run_id, uri)
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
        try:  # a URI no client reads as meant can never store the run: said before training
            refuse_raw_password(uri)
        except ResolveError as exc:
            raise RunNotStarted(f"mlflow-fingerprint: the run cannot start: {exc}") from None
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
        start = start_event(o, mlflow, fp, uri, spool.spool_id, secrets)
        writer = uploader.RunWriter(spool, uri).start()
        rec = self._rec = _Recording(writer, uri, secrets, isinstance(start, JoinRun), fp)
        if problem:
            writer.warn_once("disk", problem)
        writer.record(start)
        overrides = self._prep.forced.overrides if self._prep is not None else Overrides()
        if overrides.values:
            writer.record(Tags({layout.TAG_OVERRIDES: redact_text(overrides.canonical(), secrets)}))
        writer.drain()
        if not writer.wait_started(*start_timeout(o.start_timeout_s, uri)):
            stuck = writer.stuck  # read once: the uploader may clear it as the writer stops
            if stuck is not None:  # e.g. a deleted experiment: say so before training
                self._rec = None
                writer.discard()
                raise RunNotStarted(f"mlflow-fingerprint: the run cannot start: {stuck}")
            writer.warn_offline()
        elif writer.run is not None and not rec.joined:
            rec.attached = attach(mlflow, writer.run, uri)

        # Made on the spool thread once the run exists: serialising and scanning the record, and
        # reading and scanning a large diff, must neither block the caller nor compete with the
        # run's creation. The run's creation carries the tags already.
        self._publish(fp, "start")
        publish.to_writer(
            writer,
            [*tagging.side_artifacts(fp, secrets), *ranks.rank_artifacts(rank_records, secrets)],
        )

    def _run_info(self, stage: str) -> RunInfo:
        return run_info(
            self.options, self._prep, self._call, stage, self._program_options, self._started
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
            caps.published_loaders = tuple(fp.get(DATA_LOADERS) or ())
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
        self._training_started("first_loader")
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
            # The side group goes with the user's destroy_process_group(), not with this object.
            # Nothing here may hold it after the run: this object is in reference cycles (the
            # sinks hold its bound methods), freed by the cyclic GC only, maybe in the
            # interpreter's teardown, where freeing a gloo group aborts the finished process.
            self._job = self._stopping = self._first_metric = None
            if job is not None and job.follower_writer is not None:
                job.follower_writer.close(self.options.flush_timeout_s)
            if rec is not None:
                if rec.attached is not None:
                    from ..tracking.client import fluent_detach

                    fluent_detach(rec.attached)
                rec.writer.close(self.options.flush_timeout_s)
                if not rec.joined:
                    announce(rec.writer, self.options)

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
        if (
            caps.recapture is None
            or tuple(self._prep.recorder.loaders()) != caps.published_loaders
            or self._first_step_unpublished()
        ):
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
                layout.ARTIFACT_DIR, layout.RUN_FILE, lambda: _json(self._decorator_record())
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
            writer.record(End(status, uploader.now_ms()))

    def _first_step_unpublished(self) -> bool:
        """The first step was recorded after the fingerprint now published was captured."""
        fp = self._captures.fingerprint
        prep = self._prep
        return (
            prep is not None
            and prep.first_step.record() is not None
            and (fp is None or fp.get(FIRST_STEP_RECORDED_BY) is None)
        )

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

    def _decorator_record(self) -> dict[str, Any]:
        rec = self._rec
        secrets = rec.secrets if rec is not None else None
        return decorator_record(
            self.options, self._prep, self._captures.stages, self._stopped_at, secrets
        )


def _final_metrics(result: Any) -> dict[str, float]:
    """The storable numbers of a returned dict (``tracking.values.storable``); anything else in it
    (a string, an array of text, a complex number, a number too large for a float) is not a
    metric and is left out without a word: a returned dict is not only metrics."""
    if not isinstance(result, Mapping):
        return {}
    return dict(storable(result, None).values)


def _json(value: Any) -> bytes:
    return json.dumps(value, indent=2, default=str).encode()


def _warn(message: str) -> None:
    warn(f"mlflow-fingerprint: {message}")
