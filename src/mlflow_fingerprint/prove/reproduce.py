"""``rerun(RUN)``: run a recorded training again here and say whether it reproduces RUN.

It first says whether this machine can compute as RUN's did (what differs in hardware, driver,
libraries or packages), then reruns RUN's code and command line (with overrides) as a new run
tagged ``fingerprint.rerun_of``, and compares the curves bit for bit: up to the step the rerun
stopped after, or, for a rerun that ran to its end, everything, the summary values included.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .. import limits
from ..errors import UsageError
from .curves import compare, read
from .launch import Plan, launch_for, overrides_of, shown
from .options import RerunOptions
from .placement import NoNode, home_of, is_cluster, offered_line
from .process import Executor, LocalProcess
from .recorded import Recorded, machine_gaps, recorded
from .rerunner import Rerunner, quiet
from .results import DryRun, MachineGap, RerunResult
from .signals import ending_on_signals
from .worktree import checkout, matches_here, repository_root, require_git

# A rerun's default time bound: three times the run's own wall time, plus two minutes for the
# interpreter, the imports and the store (docs/design.md, "What a rerun may touch").
WALL_FACTOR = 3.0
WALL_MARGIN_S = 120.0
# Where the run's wall time is unknown (it never ended, or its times were not stored).
UNKNOWN_WALL_TIMEOUT_S = 3600.0


def time_bound(a: Recorded, timeout: float | None) -> float:
    """Seconds a rerun of ``a`` may run: ``timeout`` (checked by ``Reruns``), else 3x its wall
    time plus 2 minutes (at most the longest bound a timer takes)."""
    if timeout is not None:
        return float(timeout)
    if a.wall_s is None:
        return UNKNOWN_WALL_TIMEOUT_S
    return min(WALL_FACTOR * a.wall_s + WALL_MARGIN_S, limits.MAX_SECONDS)


def origin_of(repo: str | Path | None) -> Path:
    return repository_root(Path(repo) if repo is not None else Path.cwd())


def code_note(a: Recorded, origin: Path) -> str:
    r = a.recipe
    if matches_here(r, origin):
        return f"the code: this working tree ({origin}), already the run's"
    diff = " with the run's uncommitted diff applied" if r.diff else ""
    return f"the code: a temporary worktree of {origin} at commit {r.commit[:12]}{diff}"


def rerun(
    run: str,
    *,
    set: Mapping[str, Any] | None = None,  # the command line's --set
    until_step: int | None = None,
    timeout: float | None = None,
    dry_run: bool = False,
    tracking_uri: str | None = None,
    experiment: str | None = None,
    repo: str | Path | None = None,
    executor: Executor | None = None,
    progress: Callable[[str], None] | None = None,
) -> RerunResult | DryRun:
    """Run ``run``'s training again on this machine and say whether it reproduces the run.

    ``set``: field -> value to force (``seeds.requested``, ``determinism.*``, ``data.*``,
    ``program.options.NAME``, ...). ``until_step``: stop the rerun once a metric past that step
    is logged. ``timeout``: seconds the rerun may run (default 3x the run's wall time plus 2
    minutes). ``dry_run``: say what would run, run nothing. ``repo``: the clone of the run's
    repository to check its code out of (default: the one the working directory is in); the
    keywords are those of ``RerunOptions``.
    Raises ``UsageError`` (one line) on bad input; a KeyboardInterrupt ends the rerun's
    training, removes its worktree and marks its run KILLED before it propagates."""
    options = RerunOptions(
        set=set or {},
        until_step=until_step,
        timeout=timeout,
        dry_run=dry_run,
        tracking_uri=tracking_uri,
        experiment=experiment,
        repo=repo,
        executor=executor,
        progress=progress,
    )
    return rerun_with(run, options)


def rerun_with(run: str, options: RerunOptions) -> RerunResult | DryRun:
    """``rerun`` of ``run`` as ``options`` say (the command line builds them from its own)."""
    o = options
    say = o.progress or quiet
    require_git()
    knobs = o.knobs()
    a = recorded(run, o.tracking_uri, o.experiment, "RUN")
    bound = time_bound(a, o.timeout)
    origin = origin_of(o.repo)
    plan, overrides = Plan.of(knobs), overrides_of(knobs)
    run_on = o.executor or LocalProcess()
    notes: tuple[str, ...] = (code_note(a, origin),)
    home = None
    if is_cluster(run_on):
        offered = run_on.kinds()
        notes += (offered_line(offered),)
        try:
            home = home_of(a.record, offered).name
        except NoNode as exc:
            if not o.dry_run:
                raise UsageError(str(exc)) from None
            notes += (str(exc),)
    if o.dry_run:
        launch = launch_for(
            a.recipe,
            plan,
            stop_after=o.until_step,
            watch_steps=(),
            timeout_s=bound,
            overrides=overrides,
        )
        return DryRun(
            "rerun",
            (a.run_id,),
            (("the rerun", launch.describe(a.uri)),),
            notes=notes,
            until_step=o.until_step,
        )
    if home is None:
        gaps = tuple(MachineGap(d.field, d.a, d.b) for d in machine_gaps(a.record))
        say(_machine_line(gaps))
    else:
        gaps = ()
        say(f"the rerun runs on a node of RUN's machine kind, {home}")
    names = sorted(a.resolved.metrics)
    with ending_on_signals(), checkout(a.recipe, origin) as tree:
        runner = Rerunner(
            a, tree, origin, names, run_on, bound, o.until_step, progress=say, home=home
        )
        say(f"rerunning {a.run_id} in {tree} (time bound {bound:.0f} s)")
        outcome = runner.run(plan, overrides)
    reference = read(a.uri, a.run_id, names)
    stopped = outcome.stopped_at is not None
    found = compare(outcome.metrics, reference, o.until_step, stopped)
    return RerunResult(
        run_id=outcome.run_id,
        rerun_of=a.run_id,
        overrides=shown(overrides).values,
        reproduced=found.same,
        first_divergence_step=found.parted,
        stopped_at=outcome.stopped_at,
        until_step=o.until_step if stopped else None,
        machine_differs=gaps,
        summary_differs=found.summary,
        wall_s=outcome.wall_s,
    )


def _machine_line(gaps: tuple[MachineGap, ...]) -> str:
    if not gaps:
        return "this machine computes as RUN's did: the same hardware, libraries and packages"
    lines = ["this machine differs from RUN's in what no rerun can set:"]
    lines += [f"  - {g.field}: {g.run} (RUN) vs {g.here} (here)" for g in gaps]
    return "\n".join(lines)
