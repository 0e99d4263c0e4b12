"""Turn what a user typed (run id, ``runs:/<id>``, run name, JSON file) into a fingerprint record.

Files are read without importing mlflow. Every failure is a one-line ResolveError that names the
reference; a record newer than this release is refused, saying which version and what to upgrade
(``model.schema.check_version``): its fields may mean what this release cannot know.

What a user stored and a report shows (run names, params) is shown as written unless it looks
secret; then it is masked (``redact.masked_view``): the run keeps it, the report does not copy it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .. import layout
from ..errors import RefusedFile, ResolveError
from ..model.fingerprint import Fingerprint, FingerprintError
from ..model.schema import check_version, migrate
from ..redact import mask_urls_in_json, masked_view
from ..stored_files import read_regular
from ..tracking import store as tracking
from .partial import has_fingerprint_tags, partial_note, record_from_tags
from .report import RunRef

RUN_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class Resolved:
    """A fingerprint record and, for an MLflow run, what the comparator needs of the run."""

    ref: RunRef
    record: Mapping[str, Any]
    notes: tuple[str, ...] = ()
    metrics: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    tags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    tracking_uri: str | None = None
    partial: bool = False  # the record is what the run's tags hold (``compare/partial.py``)

    @property
    def is_run(self) -> bool:
        return self.ref.kind == "run"


def parse_record(
    data: str | bytes, where: str, frozen: bool = True
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A record as a plain dict, migrated to this schema where possible; a record of a newer
    schema is refused (``check_version``). ``frozen=False`` validates and migrates the record
    without the round trip through a frozen ``Fingerprint`` (which only normalises how sections
    are written): ``explain`` reads a thousand records at once."""
    try:
        text = data.decode() if isinstance(data, bytes) else data
        raw = json.loads(mask_urls_in_json(text))  # a URL's token never shown
    except (ValueError, RecursionError) as exc:
        raise ResolveError(f"{where} is not a fingerprint: not valid JSON ({exc})") from None
    version = raw.get("schema_version") if isinstance(raw, Mapping) else None
    try:
        check_version(version, where)
    except FingerprintError as exc:
        raise ResolveError(str(exc)) from None
    try:
        return (Fingerprint.from_dict(raw).to_dict() if frozen else migrate(raw)), ()
    except FingerprintError as exc:
        raise ResolveError(f"{where} is not a fingerprint: {exc}") from None


def from_object(value: Fingerprint | Mapping[str, Any], label: str) -> Resolved:
    if isinstance(value, Fingerprint):
        return Resolved(RunRef(label, None, "object"), value.to_dict())
    record, notes = parse_record(json.dumps(dict(value), default=str), label)
    return Resolved(RunRef(label, None, "object"), record, notes)


def from_file(path: Path, ref: str) -> Resolved:
    """A record file; a FIFO, device or directory is refused without waiting
    (``stored_files``: reading a FIFO nobody writes to would wait for ever)."""
    try:
        data = read_regular(path)
    except OSError as exc:
        raise ResolveError(f"cannot read {ref}: {exc.strerror or exc}") from None
    record, notes = parse_record(data, ref)
    return Resolved(RunRef(ref, None, "file"), record, notes)


def looks_like_file(ref: str) -> bool:
    return ref.endswith(".json") or Path(ref).is_file()


def run_id_of(ref: str) -> str | None:
    """The run id a reference names directly (``runs:/<id>[/path]`` or a bare id), else None."""
    if ref.startswith("runs:/"):
        run_id = ref[len("runs:/") :].strip("/").split("/")[0]
        if not RUN_ID.fullmatch(run_id):
            raise ResolveError(f"{ref!r} does not name a run id (runs:/<32 hex digits>)")
        return run_id
    return ref if RUN_ID.fullmatch(ref) else None


def find_experiment_id(mlflow_client: Any, experiment: str, uri: str) -> str:
    with tracking.store_errors(uri):
        found = mlflow_client.get_experiment_by_name(experiment)
        if found is None and experiment.isdigit():
            try:
                found = mlflow_client.get_experiment(experiment)
            except Exception as exc:
                if not tracking.is_not_found(exc):
                    raise
    if found is None:
        raise ResolveError(f"no experiment named {experiment!r} in {tracking.shown(uri)}")
    return str(found.experiment_id)


def find_run_by_name(mlflow_client: Any, name: str, experiment: str, uri: str) -> Any:
    experiment_id = find_experiment_id(mlflow_client, experiment, uri)
    with tracking.store_errors(uri):
        runs = tracking.search_all_runs(
            mlflow_client, [experiment_id], f"attributes.run_name = {tracking.quote(name)}", 3
        )
    if not runs:
        raise ResolveError(f"no run named {name!r} in experiment {experiment!r}")
    if len(runs) > 1:
        ids = ", ".join(r.info.run_id for r in runs[:3])
        raise ResolveError(
            f"run name {name!r} is ambiguous in experiment {experiment!r} "
            f"({ids}{', …' if len(runs) > 2 else ''}); give a run id"
        )
    return runs[0]


def download_record(
    mlflow_client: Any, run: Any, ref: str, uri: str
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The run's fingerprint record, read as ``explain`` reads many (``read_artifacts``): from
    disk where the run's artifact root is a local folder, else in one request, without the run
    looked up again and its logged models searched (what ``download_artifacts(run_id, ...)``
    costs: about 15 ms a run on a sqlite store)."""
    from ..tracking.experiment import read_artifacts, stored_run

    run_id = run.info.run_id
    try:
        data = read_artifacts([stored_run(run)], uri, reader=mlflow_client)[run_id]
    except RefusedFile:
        raise
    except ResolveError as exc:  # names the store already
        raise ResolveError(f"cannot fetch the fingerprint of run {run_id}: {exc}") from None
    except OSError as exc:  # a local artifact folder that cannot be read
        raise ResolveError(
            f"cannot fetch the fingerprint of run {run_id} from {tracking.shown(uri)}: "
            f"{tracking.first_line(exc)}"
        ) from None
    if data is None:
        raise ResolveError(
            f"run {run_id} ({ref}) has no fingerprint: artifact "
            f"{layout.FINGERPRINT_ARTIFACT} is missing; was it run with mlflow-fingerprint?"
        )
    return parse_record(data, f"run {run_id}")


def from_run(
    ref: str, tracking_uri: str | None, experiment: str | None, label: str = "run"
) -> Resolved:
    uri = tracking.effective_uri(tracking_uri)
    mlflow_client = tracking.reader(uri)
    run_id = run_id_of(ref)
    if run_id is not None:
        with tracking.store_errors(
            uri, missing=f"no run with id {run_id} in {tracking.shown(uri)}"
        ):
            try:
                run = mlflow_client.get_run(run_id)
            except Exception as exc:
                if not (tracking.is_not_found(exc) and experiment and not ref.startswith("runs:/")):
                    raise
                run = find_run_by_name(mlflow_client, ref, experiment, uri)
    elif experiment:
        run = find_run_by_name(mlflow_client, ref, experiment, uri)
    else:
        raise ResolveError(
            f"{ref!r} is not a fingerprint file, a run id or runs:/<id>; to use a "
            "run name, give its experiment with -e EXPERIMENT"
        )
    info = run.info
    tags = dict(run.data.tags)
    schema = tags.get(layout.TAG_SCHEMA, "")
    try:  # refused before the artifact is fetched, and when only the tags can be read
        check_version(int(schema) if schema.isdigit() else None, f"run {info.run_id}")
    except FingerprintError as exc:
        raise ResolveError(str(exc)) from None
    partial = False
    try:
        record, notes = download_record(mlflow_client, run, ref, uri)
    except ResolveError as exc:
        if isinstance(exc, RefusedFile) or not has_fingerprint_tags(tags):
            raise
        reason = str(exc).split(": ", 1)[-1]
        record, notes = record_from_tags(tags), (partial_note(label, info.run_id, reason),)
        partial = True
    user = tracking.user_params(dict(run.data.params))
    params = {masked_view(k): masked_view(v, name=k) for k, v in user.items()}
    if params:
        record = {**record, "params": params}
    name = masked_view(info.run_name) if info.run_name else info.run_name
    return Resolved(
        RunRef(masked_view(ref), info.run_id, "run", name, str(info.experiment_id)),
        record,
        notes,
        MappingProxyType(dict(run.data.metrics)),
        MappingProxyType(tags),
        uri,
        partial,
    )


def previous_run_id(ref: str, tracking_uri: str | None, experiment: str | None) -> str:
    """The run ``ref`` is compared with when given alone (``tracking.previous_run``): what a
    user means by "compare this run with the last one"."""
    if looks_like_file(ref) and not ref.startswith("runs:/"):
        if not Path(ref).exists():  # a name ending in .json: a file meant, not a run's name
            raise ResolveError(f"cannot read {ref}: no such file")
        raise ResolveError(f"{ref} is a file; give a second run or file to compare it with")
    uri = tracking.effective_uri(tracking_uri)
    mlflow_client = tracking.reader(uri)
    run_id = run_id_of(ref)
    if run_id is not None:
        missing = f"no run with id {run_id} in {tracking.shown(uri)}"
        with tracking.store_errors(uri, missing=missing):
            run = mlflow_client.get_run(run_id)
    elif experiment:
        run = find_run_by_name(mlflow_client, ref, experiment, uri)
    else:
        raise ResolveError(f"{ref!r} is not a run id or runs:/<id>; give -e EXPERIMENT for a name")
    with tracking.store_errors(uri):
        earlier = tracking.previous_run(mlflow_client, run)
    if earlier is None:
        raise ResolveError(
            f"run {run.info.run_id} has no earlier finished run in its experiment; "
            f"give a second run to compare it with, or look at it alone: "
            f"fingerprint show {run.info.run_id}"
        )
    return str(earlier.info.run_id)


def resolve(
    value: Any,
    *,
    tracking_uri: str | None = None,
    experiment: str | None = None,
    label: str = "fingerprint",
) -> Resolved:
    """Resolve a run id, ``runs:/<id>``, run name (with ``experiment``), JSON path, Fingerprint
    or record mapping."""
    if isinstance(value, Fingerprint | Mapping):
        return from_object(value, label)
    if isinstance(value, Path):
        return from_file(value, str(value))
    if not isinstance(value, str) or not value.strip():
        raise ResolveError(
            f"cannot compare {value!r}: give a run id, runs:/<id>, a run name or a "
            "fingerprint JSON file"
        )
    ref = value.strip()
    if looks_like_file(ref) and not ref.startswith("runs:/"):
        return from_file(Path(ref), ref)
    return from_run(ref, tracking_uri, experiment, label)
