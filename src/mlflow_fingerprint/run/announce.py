"""What a run does once its records are stored: print its closing line on stderr (its id, its
experiment, and a command that works at that moment: ``fingerprint show`` for the first run of an
experiment, else ``fingerprint diff`` with the run it is best compared with, so nobody looks the
id up in the UI), and have its MLflow description written: how it differs from that run.

Finding that run is a query or three to the store, made on a thread the training's exit waits
for at most ``WAIT_S``; when the store is slower, the hint falls back to ``show``, which needs no
other run. The description needs the comparator (seconds of imports and reads on a small
machine), so a detached process writes it (``cli/describe_run.py``) and the exit waits for none
of it.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from ..environment import environ_copy
from ..redact import strip_url_credentials
from ..settings import settings
from ..tracking import uploader
from ..wrap import command_lines, fit
from .options import FingerprintOptions

WAIT_S = 0.5  # the most the end of a run waits for the run to compare it with
DESCRIBER = "mlflow_fingerprint.cli.describe_run"


@dataclass
class Previous:
    """What the lookup found; ``known`` is set once ``run_id`` holds the answer."""

    known: threading.Event = field(default_factory=threading.Event)
    run_id: str | None = None


def look_up(uri: str, run_id: str, found: Previous) -> None:
    """The run ``run_id`` is best compared with (``tracking.store.previous_run``)."""
    from ..tracking import store

    try:
        mlflow_client = store.client(uri)
        earlier = store.previous_run(mlflow_client, mlflow_client.get_run(run_id))
    except Exception:  # no hint to give beyond ``show``; the run itself is stored
        return
    found.run_id = None if earlier is None else str(earlier.info.run_id)
    found.known.set()


def previous_run_id(uri: str, run_id: str) -> Previous:
    """The run to compare ``run_id`` with, known if the store says within ``WAIT_S``."""
    found = Previous()
    thread = threading.Thread(target=look_up, args=(uri, run_id, found), name="mfp-previous")
    thread.daemon = True  # the process's exit never waits past WAIT_S for it
    thread.start()
    found.known.wait(WAIT_S)
    return found


def start_describer(uri: str, run_id: str, previous: str | None) -> None:
    """Start the detached process that writes ``run_id``'s description (comparing it with
    ``previous``, or with the run it finds itself where the lookup here ran out of time); the
    URI goes in its environment (credentials already moved there by ``tracking.credentials``)."""
    env = {**environ_copy(), "MLFLOW_TRACKING_URI": uri}
    try:
        subprocess.Popen(
            [sys.executable, "-m", DESCRIBER, run_id, *([previous] if previous else [])],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in the terminal is for the training, not for it
            close_fds=True,
        )
    except OSError:  # a description is a courtesy: never a failure of the run
        return


def hint(run_id: str, previous: str | None, where: str) -> tuple[str, str]:
    """What to do with this run now, and the command that does it."""
    if previous is None:
        return "look at it", f"fingerprint show {run_id}{where}"
    return "compare it with the previous run", f"fingerprint diff {previous} {run_id}{where}"


def announce(writer: uploader.RunWriter, o: FingerprintOptions) -> None:
    """Print the closing line of the run ``writer`` made and have its description written. The
    line is off with ``quiet=True`` or MLFLOW_FINGERPRINT_QUIET=1, the description with
    MLFLOW_FINGERPRINT_DESCRIBE=0; nothing for a run that has no id (never created)."""
    run_id = writer.run_id
    loud = not (o.quiet or settings().quiet)
    describe = settings().describe
    if not run_id or not (loud or describe):
        return
    found = previous_run_id(writer.uri, run_id)
    # a lookup that ran out of time leaves the describer to find the run itself
    known = found.known.is_set()
    previous = found.run_id if known else None
    if describe and (previous is not None or not known):
        start_describer(writer.uri, run_id, previous)
    if not loud:
        return
    run: Any = writer.run
    experiment = o.experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or None
    if experiment is None and run is not None:
        experiment = f"id {run.info.experiment_id}"
    where = ""
    if o.tracking_uri:
        where = f" --tracking-uri {shlex.quote(strip_url_credentials(o.tracking_uri))}"
    what, command = hint(run_id, previous, where)
    # in the terminal's columns, the command on lines of its own that paste back whole
    head = f"mlflow-fingerprint: run {run_id} (experiment {experiment or 'default'}); {what}:"
    print(f"{fit(head)}\n{command_lines(command)}", file=sys.stderr, flush=True)
