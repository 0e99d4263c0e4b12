"""The records of a run's spool, typed: one frozen dataclass per kind, one encoder, one decoder.

The writer (``uploader``), the reader (``sync.replay``) and ``sync``'s own appends all go through
:func:`encode` and :func:`decode`, so a record's shape is spelled once. The JSON on disk is the
shape spools have always had (``{"e": "m", "k": ..., "v": ..., "s": ..., "t": ...}`` and so on):
spools written by earlier versions, and left for ``fingerprint sync`` after an outage, still decode.

A ``start`` record comes in two shapes, told apart by ``run_id``: :class:`JoinRun` logs into a run
that exists (the user's ``mlflow.start_run()``, rank 0's run), :class:`CreateRun` creates one.
Unknown keys are ignored when decoding (a newer writer may add some); a record without the fields
its kind needs, or of an unknown kind, is a :class:`BadEvent`, which ``replay`` acknowledges as
refused rather than retry for ever.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Literal

from .. import layout
from ..errors import BadEvent
from ..redact import strip_url_credentials
from .spool import encode as spool_line

Kind = layout.EventKind
Status = Literal["FINISHED", "FAILED", "KILLED"]


def _frozen(values: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(values or {}))


@dataclass(frozen=True)
class JoinRun:
    """Log into an existing run (one the user or another rank opened)."""

    kind: ClassVar[Kind] = layout.EVENT_START
    run_id: str
    tracking_uri: str | None = None  # without credentials: where the run was logging to


@dataclass(frozen=True)
class CreateRun:
    """Create the run (after looking it up by ``spool_id`` when syncing after a crash)."""

    kind: ClassVar[Kind] = layout.EVENT_START
    spool_id: str | None
    start_time: int
    experiment_name: str | None = None
    experiment_id: str | None = None
    run_name: str | None = None
    tags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    tracking_uri: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", _frozen(self.tags))


@dataclass(frozen=True)
class Tags:
    kind: ClassVar[Kind] = layout.EVENT_TAGS
    tags: Mapping[str, str]

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", _frozen(self.tags))


@dataclass(frozen=True)
class Params:
    kind: ClassVar[Kind] = layout.EVENT_PARAMS
    params: Mapping[str, str]

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", _frozen(self.params))


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric value; ``step`` None is MLflow's step 0, ``timestamp`` in ms."""

    kind: ClassVar[Kind] = layout.EVENT_METRIC
    key: str
    value: float
    step: int | None
    timestamp: int


@dataclass(frozen=True)
class Artifact:
    """A file to log under ``path`` in the run; ``file`` is relative to the spool directory (or
    absolute, where the spool's disk refused it), or ``path/name`` before the spool wrote it."""

    kind: ClassVar[Kind] = layout.EVENT_ARTIFACT
    file: str
    path: str


@dataclass(frozen=True)
class End:
    kind: ClassVar[Kind] = layout.EVENT_END
    status: Status
    end_time: int


Event = JoinRun | CreateRun | Tags | Params | Metric | Artifact | End
# An event and, for an artifact, the producer of its content (run on the spool thread).
Item = tuple[Event, Callable[[], bytes] | None]


def to_record(event: Event) -> dict[str, Any]:
    """The JSON object an event is stored as (the spool's shape, unchanged across versions)."""
    match event:
        case Metric():
            return metric_record(event.key, event.value, event.step, event.timestamp)
        case JoinRun():
            return {"e": event.kind, "run_id": event.run_id, "tracking_uri": _bare(event)}
        case CreateRun():
            return {
                "e": event.kind,
                "spool_id": event.spool_id,
                "experiment_name": event.experiment_name,
                "experiment_id": event.experiment_id,
                "run_name": event.run_name,
                "tags": dict(event.tags),
                "start_time": event.start_time,
                "tracking_uri": _bare(event),
            }
        case Tags():
            return {"e": event.kind, "tags": dict(event.tags)}
        case Params():
            return {"e": event.kind, "params": dict(event.params)}
        case Artifact():
            return {"e": event.kind, "file": event.file, "path": event.path}
        case End():
            return {"e": event.kind, "status": event.status, "end_time": event.end_time}
    raise TypeError(f"not a spool event: {event!r}")


def metric_record(key: str, value: float, step: int | None, timestamp: int) -> dict[str, Any]:
    """A metric's JSON object, built without a ``Metric`` in between (the writer's drain spools
    every logged value through here)."""
    return {"e": layout.EVENT_METRIC, "k": key, "v": value, "s": step, "t": timestamp}


def encode_metric(key: str, value: float, step: int | None, timestamp: int) -> bytes:
    """``encode(Metric(key, value, step, timestamp))``, for the writer's drain."""
    return spool_line(metric_record(key, value, step, timestamp))


def _bare(event: JoinRun | CreateRun) -> str | None:
    """The run's URI without credentials: they are never written to the spool (``sync`` takes
    them from MLflow's variables or ``--tracking-uri``)."""
    return strip_url_credentials(event.tracking_uri) if event.tracking_uri else None


def encode(event: Event) -> bytes:
    """One event as one spool line."""
    return spool_line(to_record(event))


def kind_of(record: Mapping[str, Any]) -> str | None:
    """The kind a stored record says it is, without decoding it (counting, scanning)."""
    kind = record.get("e")
    return kind if isinstance(kind, str) else None


def decode(record: Mapping[str, Any]) -> Event:
    """The event a stored record holds; :class:`BadEvent` if it holds none."""
    kind = kind_of(record)
    try:
        if kind == layout.EVENT_METRIC:
            step = record.get("s")
            return Metric(
                str(record["k"]),
                float(record["v"]),
                int(step) if step is not None else None,
                int(record["t"]),
            )
        if kind == layout.EVENT_START:
            if record.get("run_id"):
                return JoinRun(str(record["run_id"]), record.get("tracking_uri"))
            return CreateRun(
                spool_id=record.get("spool_id"),
                start_time=int(record["start_time"]),
                experiment_name=record.get("experiment_name"),
                experiment_id=record.get("experiment_id"),
                run_name=record.get("run_name"),
                tags=record.get("tags") or {},
                tracking_uri=record.get("tracking_uri"),
            )
        if kind == layout.EVENT_TAGS:
            return Tags(record["tags"])
        if kind == layout.EVENT_PARAMS:
            return Params(record["params"])
        if kind == layout.EVENT_ARTIFACT:
            return Artifact(str(record["file"]), str(record["path"]))
        if kind == layout.EVENT_END:
            return End(record["status"], int(record["end_time"]))
    except KeyError as exc:
        raise BadEvent(f"spool record {kind!r} without a valid {exc}") from None
    except (TypeError, ValueError) as exc:
        raise BadEvent(f"spool record {kind!r} with a value it cannot hold ({exc})") from None
    raise BadEvent(f"unknown spool record {kind!r}")
