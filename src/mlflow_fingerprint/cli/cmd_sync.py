"""``fingerprint sync``: upload runs spooled while the tracking server was unreachable.

Each spool is replayed from its last acknowledged record, so running sync twice uploads nothing
twice. A spool still held by a running process is left to that process; one whose every record
is stored is deleted. A run whose writer died without ending it is ended as KILLED; one whose
writer may still be alive is left RUNNING, and its spool kept for a later sync to end it. Exit 2
(one line) when a server cannot be reached, with what is left.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..redact import strip_url_credentials
from .output import emit

if TYPE_CHECKING:
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
    from ..tracking import client as mlflow_io
    from ..tracking.spool import list_spools, spool_root
    from ..tracking.sync import end_as_killed, replay, summary, unended

    root = Path(args.spool_dir).expanduser() if args.spool_dir else spool_root()
    if args.spool_dir and not root.is_dir():
        raise UsageError(f"spool directory {root} does not exist")
    override = args.tracking_uri
    spools = list_spools(root)
    if not spools:
        emit(f"nothing to sync in {root}", None)
        return 0
    mlflow_io.quiet_retry_warnings()
    lines: list[str] = []
    unreachable: list[str] = []
    for spool in spools:
        with spool.locked() as ours:
            info = summary(spool)
            name = info["run_name"] or info["run_id"] or spool.spool_id
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
            if not mlflow_io.reachable(uri):
                unreachable.append(strip_url_credentials(uri))
                lines.append(f"{name}: {strip_url_credentials(uri)} unreachable; kept {pending}")
                continue
            outcome = replay(spool, uri, search=True)
            done = outcome.caught_up and not (state is not None and state.keep)
            text = (
                f"{name}: uploaded {outcome.metrics} metric values and {outcome.events} "
                f"other records into run {outcome.run_id}"
            )
            if outcome.rejected:
                text += f"; refused by the store: {'; '.join(outcome.rejected)}"
            if outcome.error:
                unreachable.append(strip_url_credentials(uri))
                text += f"; stopped: {outcome.error}"
            elif state is not None:
                text += _end(state, False)
            lines.append(text)
        if done:
            spool.remove()
    emit("\n".join(lines), None)
    if unreachable:
        raise UsageError(
            f"tracking server unreachable ({', '.join(sorted(set(unreachable)))}); "
            "run `fingerprint sync` again when it answers"
        )
    return 0
