"""``fingerprint sync``: upload runs spooled while the tracking server was unreachable.

Each spool is replayed from its last acknowledged record, so running sync twice uploads nothing
twice. A spool still held by a running process is left to that process; one whose every record
is stored is deleted; one holding records the store refused as invalid is kept, with them and
their reasons in its ``quarantine.jsonl``, and shown. A run whose writer died without ending it
is ended as KILLED; one whose writer may still be alive is left RUNNING, and its spool kept for a
later sync to end it. Exit 2 (one line) when anything is left: a server unreachable or refusing
our credentials (MLflow's own: ``MLFLOW_TRACKING_USERNAME``/``PASSWORD``,
``MLFLOW_TRACKING_TOKEN``, ``user:password@`` in ``--tracking-uri``), a spool that cannot be
started, records refused.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..redact import strip_url_credentials
from ..tracking.local_store import failure, sqlite_file
from ..tracking.store import cli_defaults
from .output import emit

SUPPRESS_URL_PRINTING = "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"

if TYPE_CHECKING:
    from ..tracking.spool import Spool
    from ..tracking.sync import Unended


def _uri_for(start_uri: str | None, override: str | None) -> str:
    """``--tracking-uri`` wins; else the URI the run was logging to; else MLflow's default."""
    if override:
        return override
    if start_uri:
        return start_uri
    import mlflow

    return mlflow.get_tracking_uri()


def _end(state: Unended | None, dry_run: bool) -> str:
    """What became (or would become) of a run its writer never ended, as the end of a line."""
    if state is None:
        return ""
    if state.writer.gone:
        return f"; {'would end' if dry_run else 'ended'} it as KILLED: {state.writer.why}"
    kept = "; its spool is kept for a later sync to end it" if state.keep else ""
    return f"; {'would leave' if dry_run else 'left'} it RUNNING: {state.writer.why}{kept}"


def run(args: argparse.Namespace) -> int:
    from ..settings import spool_root
    from ..tracking import client as mlflow_io
    from ..tracking.spool import fallback_roots, list_spools

    root = Path(args.spool_dir).expanduser() if args.spool_dir else spool_root()
    if args.spool_dir and not root.is_dir():
        raise UsageError(f"spool directory {root} does not exist")
    override = args.tracking_uri
    # spools that went to a temporary root because this one could not be written, too
    fallbacks = [] if args.spool_dir else fallback_roots(root)
    spools = [s for folder in [root, *fallbacks] for s in list_spools(folder)]
    if not spools:
        emit(f"nothing to sync in {root}", None)
        return 0
    cli_defaults()  # one request waits a bounded time (MLFLOW_FINGERPRINT_REQUEST_TIMEOUT)
    mlflow_io.quiet_retry_warnings()
    # The total bound: at the deadline the call in progress is given up and no other is made.
    deadline = threading.Event()
    timer = threading.Timer(args.timeout, deadline.set)
    timer.daemon = True
    timer.start()
    try:
        with mlflow_io.abandon_on(deadline, f"the time limit of {args.timeout:g} s was reached"):
            return _sync(args, spools, override, fallbacks, deadline)
    finally:
        timer.cancel()


def _sync(
    args: argparse.Namespace,
    spools: list[Spool],
    override: str | None,
    fallbacks: list[Path],
    deadline: threading.Event,
) -> int:
    from ..tracking import client as mlflow_io
    from ..tracking.sync import end_as_killed, replay, summary, unended

    # MLflow prints "View run ... at <uri>" when a run ends, credentials included: sync's output
    # is its own lines (this process ends with the command).
    os.environ[SUPPRESS_URL_PRINTING] = "true"
    lines: list[str] = []
    problems: list[str] = []  # one per spool not fully uploaded, with the reason
    for spool in spools:
        with spool.locked() as ours:
            info = summary(spool)
            name = info["run_name"] or info["run_id"] or spool.spool_id
            if deadline.is_set():
                problems.append(f"{name}: not tried, the time limit of {args.timeout:g} s passed")
                continue
            if not ours:
                lines.append(f"{name}: skipped, still being written by a running process")
                continue
            state = unended(spool)
            if state is not None and state.writer.gone and not args.dry_run:
                end_as_killed(spool, state)
                info = summary(spool)
            pending = (
                f"{info['pending_metrics']} metric values, {info['pending_events']} other records"
            )
            if args.dry_run:
                lines.append(f"{name}: would upload {pending} ({spool.path}){_end(state, True)}")
                continue
            uri = _uri_for(info["tracking_uri"], override)
            shown = strip_url_credentials(uri)
            if not mlflow_io.reachable(uri):
                problems.append(f"{name}: {shown} unreachable")
                lines.append(f"{name}: {shown} unreachable; kept {pending}")
                continue
            outcome = replay(spool, uri, search=True, stop=deadline.is_set)
            into = f"into run {outcome.run_id}" if outcome.run_id else "(no run made)"
            text = (
                f"{name}: uploaded {outcome.metrics} metric values and {outcome.events} "
                f"other records {into}"
            )
            if outcome.error or outcome.stuck:
                reason = outcome.error or outcome.stuck
                if outcome.error and sqlite_file(uri) is not None:  # a file: say what is wrong
                    reason = failure(uri, outcome.error, spool.path)
                problems.append(f"{name}: {reason}")
                text += f"; stopped: {reason}; kept {summary(spool)['pending_metrics']} metric "
                text += f"values and the rest in {spool.path}"
            elif state is not None:
                text += _end(state, False)
            text += _kept_aside(spool, problems, name)
            lines.append(text)
            done = outcome.caught_up and spool.settled() and not (state is not None and state.keep)
        if done:
            spool.remove()
            if spool.path.parent in fallbacks:
                with contextlib.suppress(OSError):  # an emptied temporary root goes too
                    spool.path.parent.rmdir()
    emit("\n".join(lines), None)
    if problems:
        raise UsageError(
            f"{len(problems)} of {len(spools)} spools not fully uploaded ({'; '.join(problems)}); "
            "run `fingerprint sync` again once that is fixed"
        )
    return 0


def _kept_aside(spool: Spool, problems: list[str], name: str) -> str:
    """What of the spool was found damaged or refused by the store, as the end of its line; a
    record refused is a problem to report (it stays in the spool's quarantine until the user
    removes the spool)."""
    from ..tracking.spool import QUARANTINE

    text = ""
    if spool.damage:
        text += f"; ignored as damaged: {'; '.join(spool.damage)}"
    refused = spool.quarantined()
    if refused:
        first = refused[0].get("reason", "")
        where = spool.path / QUARANTINE
        text += f"; {len(refused)} records refused by the store, kept in {where} (first: {first})"
        problems.append(f"{name}: {len(refused)} records refused by the store, in {where}")
    return text
