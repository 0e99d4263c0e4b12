"""What ``fingerprint rerun`` and ``fingerprint bisect`` share: reading a recorded run as a
recipe, rerunning it with some of another run's values, and saying whose curve the rerun followed.

A rerun's curve is compared with the recorded ones step by step, bit for bit, up to the step the
reruns stop after: a rerun "follows" a run when every shared metric agrees there.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import layout
from ..compare.fields import field_changes
from ..compare.metrics import first_divergence
from ..compare.ranking import rank
from ..compare.report import Difference
from ..compare.resolve import Resolved, resolve
from ..compare.settable import Knob, knob_for, options_with
from ..errors import UsageError
from ..model.hashing import canonical_json
from ..run import rerun
from ..tracking import history
from ..tracking import store as tracking
from ..tracking.history import History

# Steps a rerun runs past the first divergence: enough to see the curves part, no more.
MARGIN = 2

# What says whether this machine can compute as the run's did, read in this process before any
# rerun: the hardware, its driver and libraries, the interpreter and the installed packages.
MACHINE = (
    "gpu.devices",
    "gpu.driver",
    "cuda.",
    "torch.version",
    "torch.git_version",
    "torch.build",
    "torch.cpu_capability",
    "python.version",
    "python.implementation",
    "platform.cpu.model",
    "platform.cpu.isa_flags",
    "packages.digest",
)


@dataclass(frozen=True)
class Recorded:
    """A run a rerun repeats or aims at: its record, metrics and recipe."""

    resolved: Resolved
    recipe: rerun.Recipe

    @property
    def run_id(self) -> str:
        return str(self.resolved.ref.run_id)

    @property
    def record(self) -> Mapping[str, Any]:
        return self.resolved.record


def recorded(ref: str, tracking_uri: str | None, experiment: str | None, label: str) -> Recorded:
    resolved = resolve(ref, tracking_uri=tracking_uri, experiment=experiment, label=label)
    if not resolved.is_run or resolved.partial:
        raise UsageError(f"{ref} is not an MLflow run with a stored fingerprint: nothing to rerun")
    uri = str(resolved.tracking_uri)
    run_id = str(resolved.ref.run_id)
    with tracking.store_errors(uri):
        raw = tracking.read_artifact(tracking.client(uri), run_id, layout.GIT_DIFF_ARTIFACT)
    diff = raw.decode(errors="replace") if raw is not None else None
    return Recorded(resolved, rerun.recipe_of(run_id, resolved.record, diff))


def recorded_fingerprint(run_id: str, uri: str) -> Mapping[str, Any]:
    """A rerun's own fingerprint, as stored."""
    return resolve(run_id, tracking_uri=uri, label="rerun").record


def differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[Difference, ...]:
    return rank(field_changes(a, b), a, b)


def machine_gaps(record: Mapping[str, Any]) -> tuple[Difference, ...]:
    """How this machine differs from the one ``record`` was made on, in what no rerun can set."""
    from ..capture import capture

    here = capture().to_dict()
    return tuple(
        d
        for d in differences(record, here)
        if d.effect != "none" and d.field.startswith(MACHINE) and knob_for(d) is None
    )


def curves(uri: str, run_id: str, names: Sequence[str], until: int | None) -> dict[str, History]:
    """Each metric's history up to and including step ``until``."""
    with tracking.store_errors(uri):
        return up_to(history.fetch(tracking.client(uri), uri, run_id, names), until)


def up_to(found: Mapping[str, History], until: int | None) -> dict[str, History]:
    """``found`` without the steps after ``until`` (all of it for None)."""
    if until is None:
        return dict(found)
    out = {}
    for name, h in found.items():
        kept = h.steps <= until
        out[name] = History(h.steps[kept], h.values[kept])
    return out


def parted_at(x: Mapping[str, History], y: Mapping[str, History]) -> int | None:
    """The first step where any shared metric of ``x`` and ``y`` differs; None where none does."""
    steps = [
        s for name in x.keys() & y.keys() if (s := first_divergence(x[name], y[name])) is not None
    ]
    return min(steps) if steps else None


@dataclass(frozen=True)
class Plan:
    """What one rerun sets: forced settings, command-line options, environment, B's files."""

    apply: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str | None] = field(default_factory=dict)
    files: tuple[str, ...] = ()
    # What the decorator cannot see it was given (options, variables, files), by field: added to
    # the run's ``fingerprint.overrides`` tag beside the forced settings the decorator records.
    outside: Mapping[str, Any] = field(default_factory=dict)

    @staticmethod
    def of(knobs: Sequence[Knob]) -> Plan:
        by = {kind: {k.key: k.b for k in knobs if k.kind == kind} for kind in ("apply", "option")}
        env = {k.key: (None if k.b is None else str(k.b)) for k in knobs if k.kind == "env"}
        files = tuple(sorted(k.key for k in knobs if k.kind == "code"))
        outside = {k.field: k.b for k in knobs if k.kind != "apply"}
        return Plan(by["apply"], by["option"], env, files, outside)


def overrides_of(knobs: Sequence[Knob]) -> dict[str, Any]:
    """What a rerun set, by field: the ``overrides`` of the JSON contract."""
    return {k.field: k.b for k in knobs}


@dataclass
class CodeSwap:
    """Files of B's code put into A's tree for a rerun, and A's own put back after it."""

    tree: Path
    other: Path
    saved: dict[str, bytes | None] = field(default_factory=dict)

    def set(self, paths: Sequence[str]) -> None:
        for path in set(self.saved) - set(paths):
            self._write(path, self.saved.pop(path))
        for path in paths:
            if path not in self.saved:
                self.saved[path] = _read(self.tree / path)
                self._write(path, _read(self.other / path))

    def _write(self, path: str, content: bytes | None) -> None:
        target = self.tree / path
        if content is None:
            target.unlink(missing_ok=True)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() and not path.is_symlink() else None


def progress(message: str) -> None:
    print(f"fingerprint: {message}", file=sys.stderr, flush=True)


@dataclass
class Rerunner:
    """Reruns of one recorded run (A), each compared with A's curve and, for a bisect, B's."""

    a: Recorded
    tree: Path
    uri: str
    names: list[str]
    until: int | None
    watch_step: int | None = None
    timeout_s: float | None = None
    swap: CodeSwap | None = None
    count: int = 0

    def run(self, plan: Plan) -> tuple[str, dict[str, History], int | None]:
        """Rerun A with ``plan``: (run id, its curves, the step it stopped at)."""
        self.count += 1
        if self.swap is not None:
            self.swap.set(plan.files)
        launch = rerun.Launch(
            tree=self.tree,
            argv=tuple(options_with(self.a.recipe.argv, plan.options)),
            apply=dict(plan.apply),
            env=dict(plan.env),
            stop_after=self.until,
            watch_steps=(self.watch_step,) if self.watch_step is not None else (),
            timeout_s=self.timeout_s,
        )
        token = rerun.start(self.a.recipe, launch, self.uri)
        mlflow_client = tracking.client(self.uri)
        with tracking.store_errors(self.uri):
            run_id = rerun.find_rerun(
                mlflow_client, [str(self.a.resolved.ref.experiment_id)], token
            )
            tags = mlflow_client.get_run(run_id).data.tags
            if plan.outside:
                forced = json.loads(tags.get(layout.TAG_OVERRIDES) or "{}")
                every = canonical_json({**forced, **plan.outside})
                mlflow_client.set_tag(run_id, layout.TAG_OVERRIDES, every)
        stopped = tags.get(layout.TAG_STOPPED_AT)
        found = curves(self.uri, run_id, self.names, self.until)
        return run_id, found, int(stopped) if stopped and stopped.isdigit() else None


def origin_root() -> Path:
    return rerun.repository_root(Path.cwd())


def require_git() -> None:
    if shutil.which("git") is None:
        raise UsageError("git is not on PATH: a rerun checks the run's code out with git")
