"""``fingerprint capture``: this environment's fingerprint, as a summary or the full record."""

from __future__ import annotations

import argparse

from ..capture import capture
from ..present.summary import summary_text
from .output import emit


def run(args: argparse.Namespace) -> int:
    fp = capture()
    emit(fp.to_json() if args.format == "json" else summary_text(fp), args.output)
    return 0
