"""``bisect(A, B)``: prove which difference turns A's curve into B's.

The differences between A's record and B's are sorted by what a rerun can do about them
(``compare.settable``); A is rerun as recorded (if it does not reproduce itself here, the runs
vary from run to run, and the switch under which two reruns agree is searched for instead); then
B's values are applied in halving groups (``search``) until the smallest set that moves A's
curve is found. Each rerun's own record says which of B's values were in effect, so a rerun that
keeps A's curve rules out all of them at once.

The verdict never claims more than the reruns showed: ``proven`` names at least one cause;
where every difference left is one no rerun can set (the machine, a library, a value the program
read from outside the record and logged as a param), ``not_settable`` lists them; where the
reruns could set everything and still did not move A's curve, ``not_reproducible``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..compare.fields import field_changes
from ..compare.report import Difference
from ..compare.settable import Knob, code_knobs, recorded_env
from ..errors import BuildFailed
from ..model.fields import (
    DATA_GENERATOR_SEED,
    DATA_LOADERS,
    DETERMINISM_CUDNN_BENCHMARK,
    DETERMINISM_DETERMINISTIC_ALGORITHMS,
    NUMERICS_FP32_PRECISION,
    NUMERICS_FP32_PRECISION_CUDA_MATMUL,
    PACKAGES_DIGEST,
    PARAMS,
    PROGRAM_CALL,
    SEEDS_REQUESTED,
)
from ..model.fingerprint import get_path
from ..model.vocabulary import BisectVerdict, Match
from . import search as halving
from .curves import Comparison, Metrics, compare
from .environments import Environments
from .launch import Plan, masked, overrides_of, shown
from .options import BisectOptions
from .package_sets import settle, would_build
from .pair import Setup, not_here, planned, setup
from .placement import KIND_FIELD, NoNode, Placement, is_cluster, offered_line, placement
from .process import Executor, LocalProcess, Pool, free_cores
from .recorded import Recorded, fingerprint_of
from .reproduce import origin_of, time_bound
from .rerunner import Outcome, Rerunner, Slot, quiet
from .results import BisectResult, Cause, DryRun, Rerun
from .search import Search
from .signals import ending_on_signals
from .worktree import CodeSwap, changed_files, checkout, require_git

# Switches that stop runs from varying, most specific first: the global seed fixes the most and
# says the least, so it is tried last. (enabler field, what to force)
SWITCHES: tuple[tuple[str, str, Any], ...] = (
    (DATA_LOADERS, DATA_GENERATOR_SEED, 0),
    (DETERMINISM_CUDNN_BENCHMARK, DETERMINISM_CUDNN_BENCHMARK, False),
    (DETERMINISM_DETERMINISTIC_ALGORITHMS, DETERMINISM_DETERMINISTIC_ALGORITHMS, True),
    (NUMERICS_FP32_PRECISION, NUMERICS_FP32_PRECISION_CUDA_MATMUL, "ieee"),
    (SEEDS_REQUESTED, SEEDS_REQUESTED, 0),
)

# Values the program computed from what it was given and logged (a param, a scalar argument of
# train()): a rerun reaches them only through what set them. Where no rerun gave one of them B's
# value, what set it lies outside the record (an environment variable the program reads, a data
# file): it is listed as what a rerun cannot set.
REACHED_ONLY_THROUGH = (PARAMS.prefix, PROGRAM_CALL.prefix)


def switches_for(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Knob]:
    """A knob per enabler both runs allowed, in the order they are tried."""
    from ..compare import facts
    from ..compare.enablers import find_enablers

    held = {e.field for e in find_enablers(a, b)}
    if not (facts.deterministic_on(a) or facts.deterministic_on(b)):
        # Not only on GPUs: on a CPU with several threads, index_put_(accumulate=True) adds in
        # whatever order the threads reach it, and deterministic mode sorts first.
        held.add(DETERMINISM_DETERMINISTIC_ALGORITHMS)
    return [
        Knob("apply", key, name, get_path(a, key), value, "randomness")
        for name, key, value in SWITCHES
        if name in held
    ]


class Bisection:
    """One bisect's reruns, each compared with A's and B's metrics, and its record with B's:
    which of A's differences from B it had B's value for."""

    def __init__(
        self,
        runner: Rerunner,
        b: Recorded,
        fields: frozenset[str],
        metrics: tuple[Metrics, Metrics],
        width: int = 1,
    ) -> None:
        self.runner = runner
        self.width = width  # reruns run at once; 1: one after another, as a search of old did
        self.rounds = 0
        self.b_record = b.record
        self.fields = fields  # where A's record differs from B's
        self.metrics_a, self.metrics_b = metrics
        self.reruns: list[Rerun] = []
        self.metrics_of: dict[str, Metrics] = {}
        self.stopped: dict[str, bool] = {}
        self.unapplied: set[str] = set()  # forced settings no rerun's record showed

    def _in_effect(self, run_id: str, knobs: Sequence[Knob]) -> frozenset[str]:
        """B's values the rerun's own record shows, and those set outside the training (its
        options, files, variables). A forced setting counts only where the record shows it: a
        training that does not honour ``MLFLOW_FINGERPRINT_APPLY`` (a run opened with a plain
        ``mlflow.start_run``) never took it, and is listed as what could not be set."""
        record = fingerprint_of(run_id, self.runner.uri)
        still = {c.path for c in field_changes(record, self.b_record)}
        self.unapplied.update(k.field for k in knobs if k.kind == "apply" and k.field in still)
        outside = {k.field for k in knobs if k.kind != "apply"}
        return frozenset((self.fields - still) | outside)

    def compared(self, run_id: str, reference: Metrics) -> Comparison:
        return compare(self.metrics_of[run_id], reference, self.runner.until, self.stopped[run_id])

    def rerun(self, knobs: Sequence[Knob], why: str) -> tuple[Match, str]:
        return self.rerun_round([(knobs, why)])[0]

    def rerun_round(self, asks: Sequence[tuple[Sequence[Knob], str]]) -> list[tuple[Match, str]]:
        """Reruns that do not depend on one another, run together (up to ``width`` at a time):
        whose curve each followed, and its run, in their order."""
        say = self.runner.progress
        for i, (_, why) in enumerate(asks):
            say(masked(f"rerun {self.runner.count + i + 1}: {why}", frozenset()))
        self.rounds += -(-len(asks) // max(1, self.runner.round_size(self.width)))
        plans = [(Plan.of(knobs), overrides_of(knobs)) for knobs, _ in asks]
        outcomes = self.runner.run_round(plans)
        return [
            self._judged(knobs, overrides, outcome)
            for (knobs, _), (_, overrides), outcome in zip(asks, plans, outcomes, strict=True)
        ]

    def _judged(
        self, knobs: Sequence[Knob], overrides: dict[str, Any], outcome: Outcome
    ) -> tuple[Match, str]:
        run_id = outcome.run_id
        self.metrics_of[run_id] = outcome.metrics
        self.stopped[run_id] = outcome.stopped_at is not None
        to_a = self.compared(run_id, self.metrics_a)
        match: Match = "a" if to_a.same else "neither"
        if match == "neither" and self.compared(run_id, self.metrics_b).same:
            match = "b"
        effect = self._in_effect(run_id, knobs)
        self.reruns.append(
            Rerun(
                run_id,
                shown(overrides).values,
                match,
                to_a.parted,
                outcome.stopped_at,
                effect,
                outcome.wall_s,
            )
        )
        followed = {"a": "A's curve", "b": "B's curve", "neither": "neither curve"}[match]
        self.runner.progress(f"  run {run_id} follows {followed} ({outcome.wall_s:.1f} s)")
        return match, run_id

    def attempts(self, sets: Sequence[Sequence[Knob]]) -> list[Match]:
        """:meth:`attempt` for several sets at once, in one round."""
        return [m for m, _ in self.rerun_round([(k, self._why(k)) for k in sets])]

    @staticmethod
    def _why(knobs: Sequence[Knob]) -> str:
        labels = ", ".join(k.label() for k in knobs) or "nothing (A as recorded)"
        return f"A with B's {labels}"

    def attempt(self, knobs: Sequence[Knob]) -> Match:
        return self.rerun(knobs, self._why(knobs))[0]

    def agree(self, first: str, second: str) -> bool:
        """Whether two reruns' metrics are the same, bit for bit, in the window."""
        return self.compared(first, self.metrics_of[second]).same

    def reproduces(self, switch: Knob) -> bool:
        _, first = self.rerun([switch], f"A with {switch.key}={switch.b} (1 of 2)")
        _, second = self.rerun([switch], f"A with {switch.key}={switch.b} (2 of 2)")
        return self.agree(first, second)

    def unreached(self, differences: Sequence[Difference]) -> tuple[str, ...]:
        """What no rerun could give B's value: a forced setting the training did not take, a
        value the program logged from something outside the record (``REACHED_ONLY_THROUGH``)."""
        reached = {f for r in self.reruns for f in r.in_effect}
        logged = [
            d.field
            for d in differences
            if d.field.startswith(REACHED_ONLY_THROUGH)
            and d.effect != "none"
            and d.field not in reached
        ]
        return tuple(dict.fromkeys([*sorted(self.unapplied - reached), *logged]))


def _cause(knob: Knob) -> Cause:
    return Cause(knob.field, knob.a, knob.b, knob.effect)


def bisect(
    a: str,
    b: str,
    *,
    until_step: int | None = None,
    timeout: float | None = None,
    dry_run: bool = False,
    tracking_uri: str | None = None,
    experiment: str | None = None,
    repo: str | Path | None = None,
    executor: Executor | None = None,
    progress: Callable[[str], None] | None = None,
    jobs: int | None = None,
) -> BisectResult | DryRun:
    """Prove which of B's settable values turn run A's curve into run B's, by reruns of A here.

    ``until_step``: where each rerun stops (default: the step where A and B part, plus 2).
    ``timeout``: seconds each rerun may run (default 3x A's wall time plus 2 minutes).
    ``dry_run``: say what would run, run nothing. ``repo``: the clone of the runs' repository.
    ``jobs``: reruns run at once (default: what the executor can hold; locally the free cores);
    the keywords are those of ``BisectOptions``.
    Raises ``UsageError`` (one line) on bad input; a KeyboardInterrupt ends the running
    rerun's training, removes the worktrees and marks its run KILLED before it propagates."""
    options = BisectOptions(
        until_step=until_step,
        timeout=timeout,
        dry_run=dry_run,
        tracking_uri=tracking_uri,
        experiment=experiment,
        repo=repo,
        executor=executor,
        progress=progress,
        jobs=jobs,
    )
    return bisect_with(a, b, options)


def bisect_with(a: str, b: str, options: BisectOptions) -> BisectResult | DryRun:
    """``bisect`` of A and B as ``options`` say (the command line builds them from its own)."""
    o = options
    say = o.progress or quiet
    started = time.monotonic()
    require_git()
    width = jobs_for(o.jobs, o.executor)
    s = setup(a, b, o)
    bound = time_bound(s.a, o.timeout)
    run_on = o.executor or LocalProcess(slots=width)
    placed: Placement | None = None
    if is_cluster(run_on):
        try:
            placed = placement(s.a.record, s.b.record, s.sides, run_on.kinds())
        except NoNode as exc:
            cannot = (KIND_FIELD, *(d.field for d in s.sides.cannot_set))
            return BisectResult(
                "not_settable", s.a.run_id, s.b.run_id, s.until, (), (), cannot, (), (str(exc),)
            )
        s = replace(s, sides=placed.sides)
    else:
        refused = not_here(s.a, s.b, s.until, s.sides)
        if refused is not None:
            return refused
    origin = origin_of(o.repo)
    envs = Environments()
    if o.dry_run:
        plan = planned(settle(s, envs, build=False).setup, origin, bound, would_build(s, envs))
        if placed is None:
            return plan
        return replace(plan, notes=(*plan.notes, offered_line(placed.offered), *placed.notes))
    say_builds = would_build(s, envs)
    for line in say_builds:
        say(line.replace("environment for", "building the environment for", 1))
    try:
        sets = settle(s, envs, build=bool(say_builds))
    except BuildFailed as exc:  # A's own packages: no rerun here stands for A
        cannot = (PACKAGES_DIGEST, *(d.field for d in s.sides.cannot_set))
        return BisectResult(
            "not_settable", s.a.run_id, s.b.run_id, s.until, (), (), cannot, (), (str(exc),)
        )
    s = sets.setup
    same_code = (s.a.recipe.commit, s.a.recipe.diff_digest) == (
        s.b.recipe.commit,
        s.b.recipe.diff_digest,
    )
    with ending_on_signals(), contextlib.ExitStack() as stack:
        tree_a = stack.enter_context(checkout(s.a.recipe, origin, private=True))
        tree_b = tree_a if same_code else stack.enter_context(checkout(s.b.recipe, origin))
        knobs = [*s.sides.knobs, *code_knobs(changed_files(tree_a, tree_b))]

        def another() -> Slot:  # a tree of A's code for a rerun beside the others
            tree = stack.enter_context(checkout(s.a.recipe, origin, private=True))
            return Slot(tree, CodeSwap(tree, tree_b))

        runner = Rerunner(
            s.a,
            tree_a,
            origin,
            s.names,
            run_on,
            bound,
            until=s.until,
            watch_step=s.parted,
            swap=CodeSwap(tree_a, tree_b),
            progress=say,
            env=recorded_env(knobs),
            more=another if width > 1 else None,
            packages=sets.base,
            envs=envs,
            home=placed.home if placed else None,
        )
        job = Bisection(runner, s.b, frozenset(d.field for d in s.differences), s.metrics, width)
        where = "" if s.until is None else f"; reruns compared up to step {s.until}"
        parts = "only in their summary values" if s.parted is None else f"at step {s.parted}"
        say(
            f"A and B part {parts}{where}; {len(knobs)} settable difference(s), "
            f"{len(s.sides.cannot_set)} not settable here; each rerun may run {bound:.0f} s"
            + (f"; up to {width} reruns at a time" if width > 1 else "")
        )
        result = search_causes(job, s, knobs)
    return replace(
        result,
        notes=(*result.notes, *sets.reasons, *(placed.notes if placed else ())),
        rounds=job.rounds,
        jobs=width,
        wall_s=time.monotonic() - started,
    )


def jobs_for(jobs: int | None, executor: Executor | None) -> int:
    """How many reruns run at once: ``jobs`` where given (checked by ``BisectOptions``), else
    what the executor can hold (a pool's slots; locally the free cores; one for an executor
    that runs one job at a time)."""
    if jobs is not None:
        return jobs
    if executor is None:
        return free_cores()
    return executor.slots if isinstance(executor, Pool) else 1


def _verdict_without_cause(
    job: Bisection, s: Setup, cannot: tuple[str, ...]
) -> tuple[BisectVerdict, tuple[str, ...]]:
    """Where no settable value moved A's curve: ``not_settable`` with what could not be set (the
    machine's, a library's, a value from outside the record), else ``not_reproducible``."""
    left = tuple(dict.fromkeys([*cannot, *job.unreached(s.differences)]))
    return ("not_settable" if left else "not_reproducible"), left


def search_causes(job: Bisection, s: Setup, knobs: list[Knob]) -> BisectResult:
    """The bisect proper, once reruns can be made (``job``): A as recorded, then the halving
    search, then whether the cause lands on B's curve. Kept apart from the checkout so reruns
    recorded elsewhere (a GPU machine's, tests/system/test_gpu_truth.py) can be searched again."""
    a, b, until = s.a, s.b, s.until
    cannot = tuple(d.field for d in s.sides.cannot_set)
    # What the user changed (options, files, environment) first: a setting that differs is
    # usually their consequence, and the source is the answer worth reading. The settings the
    # decorator forces are searched only where the sources do not reach B's curve.
    sources = [k for k in knobs if k.kind != "apply"]
    search = Search(job.attempt, together=job.attempts, width=job.width)
    beside = halving.first_round(sources or knobs, job.width)
    if beside:  # A as recorded in the first round of the search, not in a round of its own
        search.taken = 1
        baseline = search.ask([[], *beside])[0]
    else:
        baseline = job.attempt([])
    if baseline != "a":
        return _nondeterministic(job, s, cannot)
    found = halving.find_causes(sources, search) if sources else None
    if found is None:
        found = halving.find_causes(knobs, search)
    if not found:
        verdict, left = _verdict_without_cause(job, s, cannot)
        if not knobs:
            note = "no difference between A and B is one a rerun can set"
        else:
            note = "with every settable value of B, A's rerun still does not follow B's curve"
        note += (
            ": the cause is among what cannot be set here"
            if left
            else ": the cause is outside the record (data, a variable the program reads)"
        )
        ruled = halving.conclude([], knobs, job.reruns).ruled_out
        return BisectResult(
            verdict, a.run_id, b.run_id, until, (), ruled, left, tuple(job.reruns), (note,)
        )
    end = halving.conclude(found, knobs, job.reruns)
    landing = _landing(job, found, cannot)
    if not landing.consistent and len(found) > 1:
        # Single reruns under B's values are draws, not evidence: the halving may have been
        # misled, so no set of them is claimed.
        note = landing.note + "; which of " + ", ".join(k.field for k in found) + " lets them "
        note += "vary was not settled (a rerun that followed A's curve may have been luck)"
        return BisectResult(
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
    causes, ruled = measured_consequences(
        end, tuple(d.field for d in s.sides.no_effect), job.reruns
    )
    left = tuple(dict.fromkeys([*cannot, *job.unreached(s.differences)]))
    return BisectResult(
        "proven",
        a.run_id,
        b.run_id,
        until,
        causes,
        ruled,
        left,
        tuple(job.reruns),
        tuple(notes),
    )


def measured_consequences(
    end: halving.Conclusion, measured: Sequence[str], reruns: Sequence[Rerun]
) -> tuple[tuple[Cause, ...], tuple[str, ...]]:
    """The causes and what is ruled out, with the differences no rerun sets (the comparator
    finds they change nothing: RNG digests read as training started, a source digest) placed
    by what the reruns' own records show. One that took B's value with a cause, in the smallest
    rerun that moved A's curve, is what the cause produced (the digests seed 1 gives): listed
    beneath it, never as ruled out. One that a rerun keeping A's curve had B's value for was
    shown not to matter: ruled out. The rest no rerun set: neither."""
    kept = {f for r in reruns if r.matches == "a" for f in r.in_effect}
    causes = []
    produced: set[str] = set()
    for c in end.causes:
        moved = [r for r in reruns if halving.moves(r.matches) and c.field in r.in_effect]
        smallest = min(moved, key=lambda r: len(r.overrides), default=None)
        mine = [f for f in measured if smallest and f in smallest.in_effect and f not in kept]
        produced.update(mine)
        causes.append(replace(c, sets=(*c.sets, *mine)))
    ruled = [f for f in measured if f in kept and f not in produced]
    return tuple(causes), (*end.ruled_out, *ruled)


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
    if earlier and not job.agree(earlier[0].run_id, again):
        return Landing(
            "with B's value, runs vary from one to the next, so no rerun follows B's curve bit "
            "for bit: the cause moves A's curve as B's setting does"
        )
    rest = ", ".join(cannot) if cannot else "not in the record (data, a variable the program reads)"
    return Landing(f"the cause moves A's curve but does not land it on B's: the rest is {rest}")


def _nondeterministic(job: Bisection, s: Setup, cannot: tuple[str, ...]) -> BisectResult:
    """A rerun of A does not reproduce A here: find the switch under which two reruns agree."""
    switch = halving.find_switch(switches_for(s.a.record, s.b.record), job.reproduces)
    parted = job.reruns[0].first_divergence_step
    where = f"it parts at step {parted}" if parted is not None else "its summary values differ"
    note = f"a rerun of A here does not reproduce A ({where}): the runs vary from run to run"
    if switch is not None:
        note += f"; with {switch.key}={switch.b} two reruns agree bit for bit"
    else:
        note += "; no switch tried made two reruns agree"
    causes = (_cause(switch),) if switch is not None else ()
    return BisectResult(
        "nondeterministic",
        s.a.run_id,
        s.b.run_id,
        s.until,
        causes,
        (),
        cannot,
        tuple(job.reruns),
        (note,),
    )
