"""``fingerprint show RUN``: a run's (or a file's) fingerprint, as a summary or the record."""

from __future__ import annotations

import argparse
import json

from ..compare.resolve import resolve
from ..present.summary import summary_text
from ..tracking.store import cli_defaults
from .output import emit


def run(args: argparse.Namespace) -> int:
    cli_defaults()
    found = resolve(args.run, tracking_uri=args.tracking_uri, experiment=args.experiment)
    if args.format == "json":
        text = json.dumps(found.record, indent=2, default=str)
    else:
        head = f"run {found.ref.label}" if found.is_run else found.ref.ref
        text = "\n".join([head, summary_text(found.record), *(f"note: {n}" for n in found.notes)])
    emit(text, args.output)
    return 0
