"""``fingerprint bisect A B``: parse, call ``prove.bisect``, render. Exit 0 when a cause is proven
(or, for runs that do not reproduce, the switch that makes them reproduce), 1 when none is, 2 on
bad input (docs/design.md, "Controlled reruns")."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..tracking.store import cli_defaults
from .cmd_rerun import common
from .output import emit

if TYPE_CHECKING:
    from ..prove.options import BisectOptions


def options_of(args: argparse.Namespace) -> BisectOptions:
    """The ``BisectOptions`` ``mfp.bisect`` builds from its keywords, built from the command
    line."""
    from ..prove.options import BisectOptions

    return BisectOptions(jobs=args.jobs, **common(args))


def run(args: argparse.Namespace) -> int:
    cli_defaults()
    from ..present.bisect import render
    from ..present.rerun import as_json, dry_run_text
    from ..prove.bisection import bisect_with
    from ..prove.results import DryRun

    result = bisect_with(args.a, args.b, options_of(args))
    if isinstance(result, DryRun):
        text = as_json(result) if args.format == "json" else dry_run_text(result)
    else:
        text = render(result, args.format)
    emit(text, args.output)
    return result.exit_code
