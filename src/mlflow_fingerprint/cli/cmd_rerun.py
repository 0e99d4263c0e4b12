"""``fingerprint rerun RUN``: run RUN's training again here and say whether it reproduces RUN.

It first says whether this machine can compute as RUN's did at all (what differs in hardware,
driver, libraries or packages), then reruns RUN's code and command line (with ``--set``
overrides), as a new run tagged ``fingerprint.rerun_of``, and compares the curves bit for bit.
Exit 0 reproduced, 1 not, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from ..compare.settable import Knob
from ..errors import UsageError
from ..run import rerun
from ..tracking.store import cli_defaults
from . import proving
from .output import emit

OPTION_PREFIX = "program.options."


def parse_sets(pairs: Sequence[str]) -> list[Knob]:
    """``--set FIELD=VALUE`` as knobs: a setting the decorator forces (typed and checked by the
    same parser it uses) or a command-line option (``program.options.NAME=VALUE``)."""
    from ..run.apply import parse_override

    knobs = []
    for pair in pairs:
        name, eq, text = pair.partition("=")
        if not eq or not name:
            raise UsageError(f"--set takes FIELD=VALUE, not {pair!r}")
        if name.startswith(OPTION_PREFIX) and len(name) > len(OPTION_PREFIX):
            option = name[len(OPTION_PREFIX) :]
            knobs.append(Knob("option", option, name, None, text, "recipe"))
            continue
        key, value = parse_override(name, text)
        knobs.append(Knob("apply", key, name, None, value, "recipe"))
    return knobs


def _machine_lines(gaps: Sequence[Any]) -> list[str]:
    if not gaps:
        return ["this machine computes as RUN's did: the same hardware, libraries and packages"]
    lines = ["this machine differs from RUN's in what no rerun can set:"]
    lines += [f"  - {d.field}: {d.a} (RUN) vs {d.b} (here)" for d in gaps]
    return lines


def _diff_text(run_id: str, rerun_id: str, uri: str) -> str:
    """The diff of the rerun against RUN: what differs between them, and their curves."""
    from ..compare import diff
    from ..present import render

    return render(diff(run_id, rerun_id, tracking_uri=uri), "text")


def run(args: argparse.Namespace) -> int:
    cli_defaults()
    proving.require_git()
    if args.until_step is not None and args.until_step < 0:
        raise UsageError(f"--until-step must be >= 0, not {args.until_step}")
    knobs = parse_sets(args.set or [])
    a = proving.recorded(args.run, args.tracking_uri, args.experiment, "RUN")
    uri = str(a.resolved.tracking_uri)
    gaps = proving.machine_gaps(a.record)
    if args.format == "text":
        proving.progress("\n".join(_machine_lines(gaps)))
    names = sorted(a.resolved.metrics)
    with rerun.checkout(a.recipe, proving.origin_root()) as tree:
        runner = proving.Rerunner(a, tree, uri, names, args.until_step, timeout_s=args.timeout)
        proving.progress(f"rerunning {a.run_id} in {tree}")
        run_id, got, stopped = runner.run(proving.Plan.of(knobs))
    # A run that ran to its end is compared whole; a stopped one up to where it stopped.
    until = args.until_step if stopped is not None else None
    parted = proving.parted_at(got, proving.curves(uri, a.run_id, names, until))
    result = {
        "run_id": run_id,
        "rerun_of": a.run_id,
        "overrides": proving.overrides_of(knobs),
        "reproduced": parted is None,
        "first_divergence_step": parted,
        "stopped_at": stopped,
        "machine_differs": [{"field": d.field, "run": d.a, "here": d.b} for d in gaps],
    }
    if args.format == "json":
        emit(json.dumps(result, indent=2, default=str) + "\n", args.output)
    else:
        compared = f"up to step {until}" if until is not None else "over the whole run"
        verdict = (
            f"reproduced: every metric equal, bit for bit, {compared}"
            if parted is None
            else f"not reproduced: the curves part at step {parted}"
        )
        lines = [f"rerun of {a.run_id}: run {run_id}", verdict]
        if stopped is None:  # a whole run: the diff of the two says what differs, and where
            emit("\n".join(lines) + "\n\n" + _diff_text(a.run_id, run_id, uri), args.output)
        else:
            lines.append(f"the rerun stopped at step {stopped}; its record against RUN's: ")
            lines[-1] += f"fingerprint diff {a.run_id} {run_id} --all"
            emit("\n".join(lines) + "\n", args.output)
    return 0 if parted is None else 1
