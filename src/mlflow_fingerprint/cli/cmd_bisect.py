"""``fingerprint bisect A B``: prove which difference turns A's curve into B's.

Exit 0 when a cause is proven (or, for runs that do not reproduce, the switch that makes them
reproduce), 1 when none is, 2 on bad input (DESIGN.md, "Controlled reruns").
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..compare import bisect
from ..compare.bisect import BisectReport, Cause, Rerun, Search
from ..compare.diff import shared_metric_names
from ..compare.fields import field_changes
from ..compare.settable import Knob, Split, code_knobs, split
from ..errors import UsageError
from ..model.fingerprint import get_path
from ..model.vocabulary import BisectVerdict, Match
from ..present.bisect import render
from ..run import rerun
from ..tracking.history import History
from ..tracking.store import cli_defaults
from . import proving
from .output import emit

# Switches that stop runs from varying, most specific first: the global seed fixes the most and
# says the least, so it is tried last. (enabler field, what to force)
SWITCHES: tuple[tuple[str, str, Any], ...] = (
    ("data.loaders", "data.generator_seed", 0),
    ("determinism.cudnn_benchmark", "determinism.cudnn_benchmark", False),
    ("determinism.deterministic_algorithms", "determinism.deterministic_algorithms", True),
    ("numerics.fp32_precision", "numerics.fp32_precision.cuda_matmul", "ieee"),
    ("seeds.requested", "seeds.requested", 0),
)


def switches_for(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Knob]:
    """A knob per enabler both runs allowed, in the order they are tried."""
    from ..compare import facts
    from ..compare.enablers import find_enablers

    held = {e.field for e in find_enablers(a, b)}
    if not (facts.deterministic_on(a) or facts.deterministic_on(b)):
        # Not only on GPUs: on a CPU with several threads, index_put_(accumulate=True) adds in
        # whatever order the threads reach it, and deterministic mode sorts first.
        held.add("determinism.deterministic_algorithms")
    return [
        Knob("apply", key, name, get_path(a, key), value, "randomness")
        for name, key, value in SWITCHES
        if name in held
    ]


class Bisection:
    """One bisect's reruns, each compared with A's and B's curves up to ``until``, and its
    record with B's: which of A's differences from B it had B's value for."""

    def __init__(
        self,
        runner: proving.Rerunner,
        b: proving.Recorded,
        fields: frozenset[str],
        curves: tuple[Mapping[str, History], Mapping[str, History]],
    ) -> None:
        self.runner = runner
        self.b_record = b.record
        self.fields = fields  # where A's record differs from B's
        self.curve_a, self.curve_b = curves
        self.reruns: list[Rerun] = []
        self.curves_of: dict[str, dict[str, History]] = {}

    def _in_effect(self, run_id: str, knobs: Sequence[Knob]) -> frozenset[str]:
        record = proving.recorded_fingerprint(run_id, self.runner.uri)
        still = {c.path for c in field_changes(record, self.b_record)}
        return frozenset((self.fields - still) | {k.field for k in knobs})

    def rerun(self, knobs: Sequence[Knob], why: str) -> tuple[Match, dict[str, History]]:
        proving.progress(f"rerun {self.runner.count + 1}: {why}")
        run_id, got, stopped = self.runner.run(proving.Plan.of(knobs))
        parted = proving.parted_at(got, self.curve_a)
        match: Match = "a" if parted is None else "neither"
        if parted is not None and proving.parted_at(got, self.curve_b) is None:
            match = "b"
        overrides = proving.overrides_of(knobs)
        effect = self._in_effect(run_id, knobs)
        self.reruns.append(Rerun(run_id, overrides, match, parted, stopped, effect))
        self.curves_of[run_id] = got
        shown = {"a": "A's curve", "b": "B's curve", "neither": "neither curve"}[match]
        proving.progress(f"  run {run_id} follows {shown}")
        return match, got

    def attempt(self, knobs: Sequence[Knob]) -> Match:
        labels = ", ".join(k.label() for k in knobs) or "nothing (A as recorded)"
        return self.rerun(knobs, f"A with B's {labels}")[0]

    def reproduces(self, switch: Knob) -> bool:
        _, first = self.rerun([switch], f"A with {switch.key}={switch.b} (1 of 2)")
        _, second = self.rerun([switch], f"A with {switch.key}={switch.b} (2 of 2)")
        return proving.parted_at(first, second) is None


def _cause(knob: Knob) -> Cause:
    return Cause(knob.field, knob.a, knob.b, knob.effect)


def _not_here(
    a: proving.Recorded, b: proving.Recorded, until: int, sides: Split
) -> BisectReport | None:
    """Where this machine is not A's in what a rerun cannot set, no rerun here stands for A:
    the report says so without rerunning anything."""
    gaps = proving.machine_gaps(a.record)
    if not gaps:
        return None
    fields = list(dict.fromkeys([d.field for d in gaps] + [d.field for d in sides.cannot_set]))
    shown = ", ".join(f"{d.field} (A: {d.a}; here: {d.b})" for d in gaps[:4])
    note = (
        f"this machine differs from A's in what no rerun can set: {shown}; a rerun here cannot "
        "stand for A, so no cause is claimed. Run the bisect on A's machine."
    )
    return BisectReport(
        "not_settable", a.run_id, b.run_id, until, (), (), tuple(fields), (), (note,)
    )


def bisect_runs(args: argparse.Namespace) -> BisectReport:
    a = proving.recorded(args.a, args.tracking_uri, args.experiment, "A")
    b = proving.recorded(args.b, args.tracking_uri, args.experiment, "B")
    uri = str(a.resolved.tracking_uri)
    names = shared_metric_names(a.resolved, b.resolved, None)
    if not names:
        raise UsageError("A and B share no metric: there is no curve to bisect")
    whole_a = proving.curves(uri, a.run_id, names, None)
    whole_b = proving.curves(uri, b.run_id, names, None)
    parted = proving.parted_at(whole_a, whole_b)
    if parted is None:
        raise UsageError(f"A and B logged the same values of {', '.join(names)}: nothing to bisect")
    until = args.until_step if args.until_step is not None else parted + proving.MARGIN
    if until < 0:
        raise UsageError(f"--until-step must be >= 0, not {until}")
    differences = proving.differences(a.record, b.record)
    sides = split(differences)
    refused = _not_here(a, b, until, sides)
    if refused is not None:
        return refused
    origin = proving.origin_root()
    same_code = (a.recipe.commit, a.recipe.diff_digest) == (b.recipe.commit, b.recipe.diff_digest)
    with contextlib.ExitStack() as stack:
        tree_a = stack.enter_context(rerun.checkout(a.recipe, origin, private=True))
        tree_b = tree_a if same_code else stack.enter_context(rerun.checkout(b.recipe, origin))
        knobs = [*sides.knobs, *code_knobs(rerun.changed_files(tree_a, tree_b))]
        runner = proving.Rerunner(
            a,
            tree_a,
            uri,
            names,
            until,
            watch_step=parted,
            timeout_s=args.timeout,
            swap=proving.CodeSwap(tree_a, tree_b),
        )
        job = Bisection(
            runner,
            b,
            frozenset(d.field for d in differences),
            (proving.up_to(whole_a, until), proving.up_to(whole_b, until)),
        )
        proving.progress(
            f"A and B part at step {parted}; reruns stop after step {until}; "
            f"{len(knobs)} settable difference(s), {len(sides.cannot_set)} not settable here"
        )
        return _search(job, a, b, knobs, sides, until)


def _search(
    job: Bisection,
    a: proving.Recorded,
    b: proving.Recorded,
    knobs: list[Knob],
    sides: Split,
    until: int,
) -> BisectReport:
    cannot = tuple(d.field for d in sides.cannot_set)
    baseline = job.attempt([])
    if baseline != "a":
        return _nondeterministic(job, a, b, until, cannot)
    # What the user changed (options, files, environment) first: a setting that differs is
    # usually their consequence, and the source is the answer worth reading. The settings the
    # decorator forces are searched only where the sources do not reach B's curve.
    search = Search(job.attempt)
    sources = [k for k in knobs if k.kind != "apply"]
    found = bisect.find_causes(sources, search) if sources else None
    if found is None:
        found = bisect.find_causes(knobs, search)
    if found is None:
        verdict: BisectVerdict = "not_settable" if cannot else "not_reproducible"
        where = (
            "the cause is among what cannot be set here"
            if cannot
            else "the cause is outside the record (data, a variable the program reads)"
        )
        note = f"with every settable value of B, A's rerun still does not follow B's curve: {where}"
        return BisectReport(
            verdict, a.run_id, b.run_id, until, (), (), cannot, tuple(job.reruns), (note,)
        )
    end = bisect.conclude(found, knobs, job.reruns)
    landing = _landing(job, found, cannot)
    if not landing.consistent and len(found) > 1:
        # Single reruns under B's values are draws, not evidence: the halving may have been
        # misled, so no set of them is claimed.
        note = landing.note + "; which of " + ", ".join(k.field for k in found) + " lets them "
        note += "vary was not settled (a rerun that followed A's curve may have been luck)"
        return BisectReport(
            "nondeterministic",
            a.run_id,
            b.run_id,
            until,
            (),
            (),
            cannot,
            tuple(job.reruns),
            (note,),
        )
    notes = [landing.note]
    alone = [r for r in job.reruns if set(r.overrides) == {k.field for k in found}]
    if alone and alone[0].first_divergence_step is not None:
        notes.append(
            f"where inside step {alone[0].first_divergence_step} (for a model under mfp.watch): "
            f"fingerprint diff {job.reruns[0].run_id} {alone[0].run_id}"
        )
    if len(end.causes) > 1:
        notes.append("each of these moves A's curve")
    if end.untested:
        notes.append("not settled by any rerun: " + ", ".join(end.untested))
    no_effect = tuple(d.field for d in sides.no_effect)
    return BisectReport(
        "proven",
        a.run_id,
        b.run_id,
        until,
        end.causes,
        end.ruled_out + no_effect,
        cannot,
        tuple(job.reruns),
        tuple(notes),
    )


LANDED = "with the cause(s) alone, A's rerun follows B's curve bit for bit"


@dataclass(frozen=True)
class Landing:
    """Whether the cause(s) land A's curve on B's, and whether reruns with them agree."""

    note: str
    consistent: bool = True


def _landing(job: Bisection, causes: list[Knob], cannot: tuple[str, ...]) -> Landing:
    """Whether the cause(s) also land A's curve on B's, and if not, why not: B's value lets runs
    vary (a second rerun with it differs from the first, or keeps A's curve where the first left
    it), or the rest is in what cannot be set here."""
    wanted = {k.field for k in causes}
    earlier = [r for r in job.reruns if set(r.overrides) == wanted]
    if any(r.matches == "b" for r in earlier):
        return Landing(LANDED)
    match, again = job.rerun(causes, "the cause(s) again: do runs with B's value vary?")
    if match == "b":
        return Landing(LANDED)
    if match == "a" and any(r.matches != "a" for r in earlier):
        return Landing(
            "with B's value(s) reruns vary: the same settings left A's curve once and followed "
            "it once",
            consistent=False,
        )
    if earlier and proving.parted_at(job.curves_of[earlier[0].run_id], again) is not None:
        return Landing(
            "with B's value, runs vary from one to the next, so no rerun follows B's curve bit "
            "for bit: the cause moves A's curve as B's setting does"
        )
    rest = ", ".join(cannot) if cannot else "not in the record (data, a variable the program reads)"
    return Landing(f"the cause moves A's curve but does not land it on B's: the rest is {rest}")


def _nondeterministic(
    job: Bisection, a: proving.Recorded, b: proving.Recorded, until: int, cannot: tuple[str, ...]
) -> BisectReport:
    """A rerun of A does not reproduce A here: find the switch under which two reruns agree."""
    switch = bisect.find_switch(switches_for(a.record, b.record), job.reproduces)
    note = (
        f"a rerun of A here does not reproduce A (it parts at step "
        f"{job.reruns[0].first_divergence_step}): the runs vary from run to run"
    )
    if switch is not None:
        note += f"; with {switch.key}={switch.b} two reruns agree bit for bit"
    else:
        note += "; no switch tried made two reruns agree"
    causes = (_cause(switch),) if switch is not None else ()
    return BisectReport(
        "nondeterministic",
        a.run_id,
        b.run_id,
        until,
        causes,
        (),
        cannot,
        tuple(job.reruns),
        (note,),
    )


def run(args: argparse.Namespace) -> int:
    cli_defaults()
    proving.require_git()
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout must be > 0, not {args.timeout}")
    report = bisect_runs(args)
    emit(render(report, args.format), args.output)
    return report.exit_code
