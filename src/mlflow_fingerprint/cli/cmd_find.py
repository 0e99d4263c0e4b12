"""``fingerprint find RUN [--same env|numerics|recipe|all]``: runs with a matching hash."""

from __future__ import annotations

import argparse
import json

from ..compare.find import FindResult, find
from ..tracking.store import cli_defaults
from ..wrap import fit, shorten
from .output import emit

NAME_CHARS = 28  # a rerun's name runs long: the table keeps the columns after it on the line


def text(result: FindResult) -> str:
    head = (
        f"{len(result.matches)} run(s) with {result.tag} = {result.hash} "
        f"(same as {result.ref.label})"
    )
    if not result.matches:
        return head
    rows = [("run id", "name", "experiment", "started", "seed")] + [
        (
            m.run_id,
            shorten(m.run_name or "—", NAME_CHARS),
            m.experiment_id,
            m.started or "—",
            m.seed or "—",
        )
        for m in result.matches
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return fit(
        "\n".join(
            [
                head,
                *(
                    "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                    for r in rows
                ),
            ]
        )
    )


def run(args: argparse.Namespace) -> int:
    cli_defaults()
    result = find(
        args.run,
        same=args.same,
        tracking_uri=args.tracking_uri,
        experiment=args.experiment,
        max_results=args.max_results,
    )
    emit(
        json.dumps(result.to_dict(), indent=2) if args.format == "json" else text(result),
        args.output,
    )
    return 0
