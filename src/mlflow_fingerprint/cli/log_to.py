"""``--log-to RUN``: keep a report (of ``diff`` or ``explain``) beside a run, as an MLflow
artifact."""

from __future__ import annotations

from typing import Any

from .. import layout
from ..compare.report import Report
from ..compare.resolve import find_run_by_name, run_id_of
from ..errors import ResolveError
from ..tracking import store as tracking


def target_run_id(ref: str, tracking_uri: str | None, experiment: str | None) -> tuple[Any, str]:
    """(client, run id) of the run to log to; checked before any work is done."""
    uri = tracking.effective_uri(tracking_uri)
    mlflow_client = tracking.client(uri)
    run_id = run_id_of(ref)
    if run_id is None:
        if not experiment:
            raise ResolveError(
                f"--log-to {ref!r} is not a run id or runs:/<id>; to use a run "
                "name, give its experiment with -e EXPERIMENT"
            )
        return mlflow_client, find_run_by_name(mlflow_client, ref, experiment, uri).info.run_id
    with tracking.store_errors(
        uri, missing=f"--log-to: no run with id {run_id} in {tracking.shown(uri)}"
    ):
        mlflow_client.get_run(run_id)
    return mlflow_client, run_id


def artifact_name(report: Report, extension: str) -> str:
    def short(ref: Any) -> str:
        return (ref.run_id or ref.ref.rsplit("/", 1)[-1].removesuffix(".json"))[:12]

    return layout.report_artifact(short(report.a), short(report.b), extension)


def log_report(mlflow_client: Any, run_id: str, report: Report, text: str, extension: str) -> str:
    """Store a diff report's ``text`` as an artifact of ``run_id``; returns the artifact path."""
    return log_text(mlflow_client, run_id, text, artifact_name(report, extension))


def log_text(mlflow_client: Any, run_id: str, text: str, path: str) -> str:
    """Store ``text`` as the artifact ``path`` of ``run_id``; returns the path."""
    with tracking.store_errors(str(mlflow_client.tracking_uri)):
        mlflow_client.log_text(run_id, text, path)
    return path
