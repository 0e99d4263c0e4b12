"""``fingerprint diff A B``: explain why two runs differ; exit 0 same, 1 differ, 2 bad input.

With one run, A is the latest finished run of its experiment that started before it."""

from __future__ import annotations

import argparse
import sys

from ..compare import diff
from ..present import EXTENSIONS, render
from ..tracking.store import cli_defaults
from ..wrap import fit
from .output import coloured, emit


def run(args: argparse.Namespace) -> int:
    cli_defaults()
    log_target = None
    if args.log_to:
        from .log_to import target_run_id

        log_target = target_run_id(args.log_to, args.tracking_uri, args.experiment)
    a, b = args.a, args.b
    if b is None:  # one run: compare it with the run before it in its experiment
        from ..compare.resolve import previous_run_id

        a, b = previous_run_id(args.a, args.tracking_uri, args.experiment), args.a
    report = diff(
        a,
        b,
        tracking_uri=args.tracking_uri,
        experiment=args.experiment,
        atol=args.atol,
        rtol=args.rtol,
        metrics=args.metric,
    )
    rich = args.format == "text" and coloured(args.output)
    emit(render(report, args.format, args.all, rich=rich), args.output, styled=rich)
    if log_target is not None:
        from .log_to import log_report

        mlflow_client, run_id = log_target
        path = log_report(
            mlflow_client,
            run_id,
            report,
            render(report, args.format, args.all),
            EXTENSIONS[args.format],
        )
        # on stderr: stdout is the report itself, often redirected to a file
        print(fit(f"fingerprint: report stored in run {run_id} as {path}"), file=sys.stderr)
    return report.exit_code
