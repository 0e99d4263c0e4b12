"""``fingerprint audit``: what in this environment threatens reproducibility, worst first."""

from __future__ import annotations

import argparse
import json

from ..audit import Audit, audit
from .output import emit


def text(result: Audit) -> str:
    if not result.findings:
        lines = ["No threats to reproducibility found."]
    else:
        lines = [f"{len(result.findings)} threat(s) to reproducibility, worst first:"]
        for i, f in enumerate(result.findings, start=1):
            lines += [
                f"{i}. [{f.severity}] {f.finding}",
                f"   fix: {f.fix}",
                f"   source: {f.source}",
            ]
    return "\n".join([*lines, "", "passed:", *(f"  - {p}" for p in result.passed)])


def run(args: argparse.Namespace) -> int:
    result = audit()
    emit(
        json.dumps(result.to_dict(), indent=2) if args.format == "json" else text(result),
        args.output,
    )
    return 0
