"""``fingerprint explain EXPERIMENT``: what accounts for a metric's spread across the runs; exit
0 with a report, 2 on bad input (one line on stderr)."""

from __future__ import annotations

import argparse
import sys

from .. import layout
from ..explain.experiment import explain_with
from ..explain.options import ExplainOptions
from ..present import EXTENSIONS
from ..present.explain import pieces, render
from ..tracking.progress import Progress
from ..tracking.store import cli_defaults
from ..wrap import fit
from .output import coloured, emit


def options_of(args: argparse.Namespace, progress: bool | Progress) -> ExplainOptions:
    """The ``ExplainOptions`` ``mfp.explain`` builds from its keywords, built from the command
    line (``progress``: the line the command shows while it reads, closed by the command)."""
    return ExplainOptions(
        metric=args.metric,
        at=args.at,
        filter_string=args.filter,
        tracking_uri=args.tracking_uri,
        include_unfinished=args.include_unfinished,
        progress=progress,
    )


def run(args: argparse.Namespace) -> int:
    cli_defaults()
    log_target = None
    if args.log_to:
        from .log_to import target_run_id

        log_target = target_run_id(args.log_to, args.tracking_uri, args.experiment)
    progress = Progress(not args.quiet)
    try:
        report = explain_with(args.experiment, options_of(args, progress))
    finally:
        progress.close()  # before an error's line, which must stand alone
    rich = args.format == "text" and coloured(args.output)
    emit(pieces(report, args.format, rich=rich), args.output)
    if log_target is not None:
        from .log_to import log_text

        mlflow_client, run_id = log_target
        path = layout.explain_artifact(report.experiment_id, report.metric, EXTENSIONS[args.format])
        log_text(mlflow_client, run_id, render(report, args.format), path)
        print(fit(f"fingerprint: report stored in run {run_id} as {path}"), file=sys.stderr)
    return 0
