"""The one line a run prints on stderr when it ends: its id, its experiment, and the command that
compares it with the run before it, so nobody has to look the id up in the UI."""

from __future__ import annotations

import os
import shlex
import sys

from ..redact import strip_url_credentials
from ..settings import settings
from ..tracking import uploader
from .options import Options


def announce(writer: uploader.RunWriter, o: Options) -> None:
    """Print the closing line for the run ``writer`` made. Off with ``quiet=True`` or
    MLFLOW_FINGERPRINT_QUIET=1, and for a run that has no id (never created)."""
    if o.quiet or settings().quiet or not writer.run_id:
        return
    run = writer.run
    experiment = o.experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or None
    if experiment is None and run is not None:
        experiment = f"id {run.info.experiment_id}"
    where = ""
    if o.tracking_uri:
        where = f" --tracking-uri {shlex.quote(strip_url_credentials(o.tracking_uri))}"
    print(
        f"mlflow-fingerprint: run {writer.run_id} (experiment {experiment or 'default'}); "
        f"compare with the previous run: fingerprint diff {writer.run_id}{where}",
        file=sys.stderr,
        flush=True,
    )
