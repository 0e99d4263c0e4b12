"""Reruns of one recorded run in one worktree: each started through an executor, found again in
the store by the token it was given, and read back; each ended and marked on every way out.

A rerun that times out or is interrupted leaves no RUNNING run: its training's process group is
ended (``process``), then its MLflow run, where it exists, is ended FAILED (a timeout) or KILLED
(a signal) and tagged with the reason (``mlflow_fingerprint.end_reason``).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import layout
from ..environment import environ_copy
from ..errors import Terminated, UsageError
from ..model.hashing import canonical_json
from ..tracking import store as tracking
from .curves import Metrics, read
from .environments import Environments
from .launch import Job, Launch, Plan, job_for, launch_for, masked, shown
from .names import rerun_name
from .process import Ended, Executor, TimedOut, run_round
from .recorded import Recorded
from .worktree import CodeSwap

Progress = Callable[[str], None]
ENDED_BY = "rerun"


@dataclass(frozen=True)
class Outcome:
    """One finished rerun: its run, its metrics (whole), where it stopped, how long it took."""

    run_id: str
    metrics: Metrics
    stopped_at: int | None
    wall_s: float


@dataclass(frozen=True)
class Slot:
    """Where one rerun of a round runs: a tree of A's code, and B's files swapped into it."""

    tree: Path
    swap: CodeSwap | None = None


@dataclass(frozen=True)
class Started:
    """A rerun made ready: the token its run is found by, what it sets, the job it runs."""

    token: str
    plan: Plan
    launch: Launch
    job: Job
    number: int  # its place among this bisect's reruns, for its name (a round starts several)


def quiet(message: str) -> None:
    del message


@dataclass
class Rerunner:
    """Reruns of ``a`` in ``tree`` (checked out of ``origin``), compared on metrics ``names``."""

    a: Recorded
    tree: Path
    origin: Path
    names: Sequence[str]
    executor: Executor
    timeout_s: float
    until: int | None = None
    watch_step: int | None = None
    swap: CodeSwap | None = None
    progress: Progress = quiet
    # Another tree for a rerun that runs beside others (a bisect's round); None: one at a time.
    more: Callable[[], Slot] | None = None
    # Variables every rerun starts with (A's recorded values), unless its plan sets them.
    env: Mapping[str, str | None] = field(default_factory=dict)
    # Package versions every rerun starts with (A's, where this environment's differ), and
    # where environments with them are built; None: every rerun in this environment.
    packages: Mapping[str, str] = field(default_factory=dict)
    envs: Environments | None = None
    home: str | None = None  # the machine kind reruns run on, on a cluster (prove/placement.py)
    count: int = 0
    launches: list[Launch] = field(default_factory=list)
    slots: list[Slot] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return self.a.uri

    def launch(self, plan: Plan, overrides: dict[str, Any]) -> Launch:
        return launch_for(
            self.a.recipe,
            replace(plan, env={**self.env, **plan.env}),
            stop_after=self.until,
            watch_steps=(self.watch_step,) if self.watch_step is not None else (),
            timeout_s=self.timeout_s,
            overrides=overrides,
        )

    def run(self, plan: Plan, overrides: dict[str, Any]) -> Outcome:
        """Rerun A with ``plan`` (``overrides``: what it sets, by field, as the tag shows it)."""
        return self.run_round([(plan, overrides)])[0]

    def _slot(self, i: int) -> Slot:
        while len(self.slots) <= i:
            if not self.slots:
                self.slots.append(Slot(self.tree, self.swap))
            elif self.more is None:
                raise ValueError("a round of several reruns needs a tree for each")
            else:
                self.slots.append(self.more())
        return self.slots[i]

    def round_size(self, wanted: int) -> int:
        """How many reruns one round can hold: one where no other tree can be had."""
        return wanted if self.more is not None else min(wanted, 1)

    def python_for(self, plan: Plan) -> str | None:
        """The interpreter of the environment ``plan`` runs in: this one where A's packages are
        here and the plan sets none, else one built with them (``BuildFailed`` where not)."""
        wanted = {**self.packages, **plan.packages}
        if not wanted or self.envs is None:
            return None
        return self.envs.python_for(wanted)

    def _prepare(self, plan: Plan, overrides: dict[str, Any], slot: Slot) -> Started:
        self.count += 1
        launch = replace(self.launch(plan, overrides), python=self.python_for(plan))
        if slot.swap is not None:
            slot.swap.set(plan.files)
        token = uuid.uuid4().hex
        job = job_for(launch, slot.tree, self.origin, self.uri, token, environ_copy())
        job = replace(job, kind=plan.place or self.home)
        return Started(token, plan, launch, job, self.count)

    def run_round(self, items: Sequence[tuple[Plan, dict[str, Any]]]) -> list[Outcome]:
        """Reruns of A that do not depend on one another, run together by the executor (each in
        a tree of its own), in their order. Every rerun that did not end itself is ended and
        marked; the first failure is raised once all of them are."""
        if len(items) > 1 and self.round_size(len(items)) < len(items):
            return [self.run_round([item])[0] for item in items]
        started = [self._prepare(p, o, self._slot(i)) for i, (p, o) in enumerate(items)]
        began = time.monotonic()
        try:
            ended = run_round(self.executor, [s.job for s in started])
        except KeyboardInterrupt as exc:
            why = f"interrupted by {exc.name}" if isinstance(exc, Terminated) else "interrupted"
            for s in started:
                self._end(s.token, "KILLED", f"the rerun was {why}")
            raise
        wall = time.monotonic() - began
        failures = [self._failed(s, e) for s, e in zip(started, ended, strict=True)]
        first = next((f for f in failures if f is not None), None)
        if first is not None:
            raise first
        return [
            self._outcome(s, e.wall_s or wall)  # type: ignore[union-attr]
            for s, e in zip(started, ended, strict=True)
        ]

    def _failed(self, s: Started, ended: Ended) -> UsageError | None:
        """The error a rerun that did not finish well becomes, its run ended FAILED."""
        if isinstance(ended, TimedOut):
            self._end(s.token, "FAILED", str(ended))
            return UsageError(str(ended) + " (--timeout sets it)")
        if ended.returncode:
            self._end(s.token, "FAILED", f"the training exited with status {ended.returncode}")
            return UsageError(
                f"the training failed in the rerun (exit {ended.returncode}): {ended.last_line}"
                + (f" (its whole output: {ended.log})" if ended.log else "")
            )
        return None

    def _outcome(self, s: Started, wall: float) -> Outcome:
        mlflow_client = tracking.client(self.uri)
        with tracking.store_errors(self.uri):
            run_id = find_rerun(mlflow_client, [str(self.a.resolved.ref.experiment_id)], s.token)
            tags = mlflow_client.get_run(run_id).data.tags
            self._tag_overrides(mlflow_client, run_id, tags, s.plan, s.launch)
            mlflow_client.update_run(run_id, name=self.name(s.launch, s.number))
        stopped = tags.get(layout.TAG_STOPPED_AT)
        metrics = read(self.uri, run_id, self.names)
        at = int(stopped) if stopped and stopped.isdigit() else None
        return Outcome(run_id, metrics, at, wall)

    def name(self, launch: Launch, number: int) -> str:
        """The rerun's run name: A's (or its id), its number here, what it set (redacted)."""
        ref = self.a.resolved.ref
        return rerun_name(ref.name or self.a.run_id[:8], number, launch.overrides.values)

    def _tag_overrides(
        self, mlflow_client: Any, run_id: str, tags: Any, plan: Plan, launch: Launch
    ) -> None:
        """The run's ``fingerprint.overrides``: the forced settings the training recorded, and
        what it could not see it was given (options, variables, files), all redacted."""
        if not plan.outside:
            return
        secrets = launch.overrides.secrets
        outside = shown(plan.outside, secrets).values
        forced = json.loads(tags.get(layout.TAG_OVERRIDES) or "{}")
        every = masked(canonical_json({**forced, **outside}), secrets)
        mlflow_client.set_tag(run_id, layout.TAG_OVERRIDES, every)

    def _end(self, token: str, status: str, reason: str) -> None:
        """End the run a rerun made, where it exists and is still RUNNING (a timeout ends it
        FAILED whatever its training wrote on its way out), and say why. Never raises: this runs
        on the way out of an error or a signal."""
        try:
            mlflow_client = tracking.client(self.uri)
            run_id = find_rerun(mlflow_client, [str(self.a.resolved.ref.experiment_id)], token)
        except UsageError:  # the training never created its run: nothing is left RUNNING
            return
        except Exception as exc:  # the store could not be read: the run may stay RUNNING
            self.progress(f"could not end the rerun's run: {tracking.first_line(exc)}")
            return
        try:
            run = mlflow_client.get_run(run_id)
            if run.info.status == "RUNNING" or status == "FAILED":
                mlflow_client.set_terminated(run_id, status)
            mlflow_client.set_tag(run_id, layout.INTERNAL_ENDED_BY, ENDED_BY)
            mlflow_client.set_tag(run_id, layout.INTERNAL_END_REASON, reason)
        except Exception as exc:
            self.progress(f"could not end the rerun's run {run_id}: {tracking.first_line(exc)}")


def find_rerun(mlflow_client: Any, experiment_ids: Sequence[str], token: str) -> str:
    """The run a rerun created, found by the token it was tagged with: the outermost one, where
    the training opened runs of its own inside it (they get the token through the run context
    provider too)."""
    from ..tracking.store import quote, search_all_runs

    wanted = f"tags.`{layout.INTERNAL_RERUN_TOKEN}` = {quote(token)}"
    for ids in (list(experiment_ids), None):
        if ids is None:
            ids = [e.experiment_id for e in mlflow_client.search_experiments()]
        runs = search_all_runs(mlflow_client, ids, wanted, 20)
        if runs:
            top = [r for r in runs if layout.MLFLOW_PARENT_RUN_ID not in r.data.tags] or runs
            return str(min(top, key=lambda r: r.info.start_time or 0).info.run_id)
    raise UsageError("the rerun's training ended without recording a fingerprinted run")
