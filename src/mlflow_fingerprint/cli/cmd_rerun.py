"""``fingerprint rerun RUN``: parse, call ``prove.rerun``, render. Exit 0 reproduced, 1 not, 2 bad
input (docs/design.md, "Controlled reruns")."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..tracking.store import cli_defaults
from ..wrap import fit
from .output import emit

if TYPE_CHECKING:
    from ..prove.options import RerunOptions


def parse_sets(pairs: Sequence[str]) -> dict[str, Any]:
    """``--set FIELD=VALUE``, repeated, as field -> text (typed and checked by ``prove``)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, eq, text = pair.partition("=")
        if not eq or not name:
            raise UsageError(f"--set takes FIELD=VALUE, not {pair!r}")
        out[name] = text
    return out


def progress(message: str) -> None:
    print(fit(f"fingerprint: {message}"), file=sys.stderr, flush=True)


def common(args: argparse.Namespace) -> dict[str, Any]:
    """The fields of ``prove.options.Reruns`` (what ``rerun`` and ``bisect`` take alike) from
    their command lines."""
    from ..prove.executors import executor_for

    return {
        "executor": executor_for(args.executor),
        "until_step": args.until_step,
        "timeout": args.timeout,
        "dry_run": args.dry_run,
        "tracking_uri": args.tracking_uri,
        "experiment": args.experiment,
        "progress": progress,
    }


def options_of(args: argparse.Namespace) -> RerunOptions:
    """The ``RerunOptions`` ``mfp.rerun`` builds from its keywords, built from the command line."""
    from ..prove.options import RerunOptions

    return RerunOptions(set=parse_sets(args.set or []), **common(args))


def run(args: argparse.Namespace) -> int:
    cli_defaults()
    from ..present.rerun import as_json, dry_run_text, rerun_text
    from ..prove.reproduce import rerun_with
    from ..prove.results import DryRun

    result = rerun_with(args.run, options_of(args))
    if args.format == "json":
        emit(as_json(result), args.output)
    elif isinstance(result, DryRun):
        emit(dry_run_text(result), args.output)
    else:
        diff_text = None
        if result.stopped_at is None:  # a whole run: its diff says what differs, and where
            from ..compare import diff
            from ..present import render

            report = diff(result.rerun_of, result.run_id, tracking_uri=args.tracking_uri)
            diff_text = render(report, "text")
        emit(rerun_text(result, diff_text), args.output)
    return result.exit_code
