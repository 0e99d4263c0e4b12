"""``fingerprint audit [RUN]``: what threatens reproducibility, worst first: in a recorded run
(its fingerprint read from MLflow or a file, as ``diff`` reads it), or without RUN in this
environment, where what only a training program decides (its seeds, its DataLoaders) is left
out rather than reported about the ``fingerprint`` command's own process."""

from __future__ import annotations

import argparse
import json

from ..audit import Audit, audit
from ..wrap import columns, fit, wrap
from .output import emit


def text(result: Audit, subject: str) -> str:
    if not result.findings:
        lines = [f"No threats to reproducibility found in {subject}."]
    else:
        lines = [f"{len(result.findings)} threat(s) to reproducibility in {subject}, worst first:"]
        width = columns()  # a finding, its fix and its sources wrap under their first word
        for i, f in enumerate(result.findings, start=1):
            lines += wrap(f"[{f.severity}] {f.finding}", width, "   ", f"{i}. ".ljust(3))
            lines += wrap(f.fix, width, "        ", "   fix: ")
            lines += wrap(f.source, width, "           ", "   source: ")
    lines += ["", "passed:", *(f"  - {p}" for p in result.passed)]
    if result.not_checked:
        lines += [
            "",
            f"not checked ({', '.join(result.not_checked)}): a training program sets them; "
            "fingerprint audit RUN checks a recorded run",
        ]
    return fit("\n".join(lines))


def run(args: argparse.Namespace) -> int:
    if args.run is None:
        result, subject = audit(environment_only=True), "this environment"
    else:
        from ..compare.resolve import resolve
        from ..tracking.store import cli_defaults

        cli_defaults()
        found = resolve(args.run, tracking_uri=args.tracking_uri, experiment=args.experiment)
        result = audit(found.record)
        subject = f"run {found.ref.run_id}" if found.is_run else found.ref.ref
    emit(
        json.dumps(result.to_dict(), indent=2) if args.format == "json" else text(result, subject),
        args.output,
    )
    return 0
