"""A rerun's result, and what a dry run of a rerun or a bisect would do, as text or JSON."""

from __future__ import annotations

import json
from typing import Any

from ..prove.results import DryRun, RerunResult
from ..wrap import fit
from .escape import terminal


def as_json(result: RerunResult | DryRun) -> str:
    return json.dumps(result.to_dict(), indent=2, default=str) + "\n"


def rerun_text(result: RerunResult, diff_text: str | None = None) -> str:
    """The verdict, what was compared and where the curves part; ``diff_text``, the diff of a
    rerun that ran to its end against the run, after it."""
    stopped = result.stopped_at is not None
    compared = f"up to step {result.until_step}" if stopped else "over the whole run"
    if result.reproduced:
        verdict = f"reproduced: every metric equal, bit for bit, {compared}"
    elif result.first_divergence_step is not None:
        verdict = f"not reproduced: the curves part at step {result.first_divergence_step}"
    else:
        verdict = "not reproduced: the summary values differ: " + ", ".join(result.summary_differs)
    lines = [f"rerun of {result.rerun_of}: run {result.run_id}", verdict]
    if result.overrides:
        lines.append("set: " + ", ".join(f"{k}={v}" for k, v in result.overrides.items()))
    if stopped:
        lines.append(
            f"the rerun stopped at step {result.stopped_at} (its summary, logged at the end, "
            f"was not compared); its record against RUN's: "
            f"fingerprint diff {result.rerun_of} {result.run_id} --all"
        )
    text = fit(terminal("\n".join(lines))) + "\n"
    return text + "\n" + diff_text if diff_text else text


def _launch_lines(launch: dict[str, Any]) -> list[str]:
    entry = launch["entry"]
    where = f"-m {entry['module']}" if entry["module"] else (entry["path"] or launch["argv"][0])
    diff = " + the run's uncommitted diff" if launch["diff_applied"] else ""
    lines = [
        f"  commit: {launch['commit']}{diff}",
        f"  entry ({entry['kind']}): {where}",
        f"  argv: {' '.join(launch['argv'])}",
        f"  working directory: {launch['cwd']}",
        f"  time bound: {launch['timeout_s']:.0f} s",
        "  environment:",
        *(f"    {k}={v}" for k, v in launch["env"].items()),
    ]
    if launch["env_unset"]:
        lines.append(f"  unset: {', '.join(launch['env_unset'])}")
    overrides = launch["overrides"]
    lines.append("  overrides: " + (", ".join(f"{k}={v}" for k, v in overrides.items()) or "none"))
    if launch["files_from_b"]:
        lines.append(f"  files of B's code: {', '.join(launch['files_from_b'])}")
    return lines


def dry_run_text(result: DryRun) -> str:
    lines = [f"fingerprint {result.command} {' '.join(result.runs)} (dry run: nothing was run)"]
    lines += list(result.notes)
    if result.until_step is not None:
        lines.append(
            f"each rerun compared up to step {result.until_step}; "
            "it stops at the first step past it"
        )
    for what, launch in result.launches:
        lines.append(f"{what}:")
        lines += _launch_lines(dict(launch))
    if result.command == "bisect":
        lines.append("settable differences (tried in halving groups):")
        lines += [f"  - {s['field']}: {s['a']} -> {s['b']} ({s['how']})" for s in result.settable]
        lines += ["  - none"] * (not result.settable)
        lines.append("cannot be set here:")
        lines += [f"  - {f}" for f in result.cannot_set] or ["  - none"]
    return fit(terminal("\n".join(lines))) + "\n"
