"""The recipe of one rerun: what it runs, in which directory, with which variables and overrides.

A :class:`Plan` says which of another run's values a rerun takes (from a bisect's knobs or a
user's ``--set``); :func:`launch_for` turns a recorded run's :class:`~.recipe.Recipe` and a plan
into a :class:`Launch`, everything a rerun will do, which a dry run prints and
:func:`job_for` turns into the command a process runs once a worktree exists.

What a launch may touch (docs/design.md, "What a rerun may touch"): the script, ``argv[0]`` and the
working directory resolve inside the worktree (links followed; a linked untracked file may lead
into the repository it came from, nowhere else); the variables a plan sets are those
``model.variables`` lets a process be started with (never the interpreter's or the loader's); the
package's own control variables in this process's
environment are replaced, never inherited. Overrides are shown and stored redacted, by the rule
argv is redacted with (``capture.program.redact_option``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from typing import Any

from .. import settings
from ..capture.program import redact_option
from ..compare.settable import Knob, options_with
from ..errors import UsageError
from ..model.fields import PROGRAM_OPTIONS
from ..model.variables import process_may_set, settable_value
from ..redact import MASK, redact_text, strip_url_credentials
from .recipe import Recipe

OPTION_PREFIX = PROGRAM_OPTIONS.prefix
# What this process's environment may hold of ours that must not reach a rerun's training: a
# stale forced setting, a stop, a disabled recorder (the rerun would record nothing).
CONTROL = (
    settings.APPLY,
    settings.STOP_AFTER,
    settings.WATCH_STEPS,
    settings.RERUN_OF,
    settings.RERUN_TOKEN,
    settings.DISABLE,
    "MLFLOW_RUN_ID",
)


@dataclass(frozen=True)
class Plan:
    """What one rerun sets: forced settings, command-line options, variables, files of B's code.
    ``outside``: what the decorator cannot see it was given (options, variables, files), by
    field, added to the run's ``fingerprint.overrides`` tag beside the forced settings."""

    apply: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str | None] = field(default_factory=dict)
    files: tuple[str, ...] = ()
    outside: Mapping[str, Any] = field(default_factory=dict)
    # Packages at B's versions, in an environment built for them (``environments``).
    packages: Mapping[str, str] = field(default_factory=dict)
    place: str | None = None  # the machine kind to run on (a cluster's; prove/placement.py)

    @staticmethod
    def of(knobs: Sequence[Knob]) -> Plan:
        by = {kind: {k.key: k.b for k in knobs if k.kind == kind} for kind in ("apply", "option")}
        env = {k.key: (None if k.b is None else str(k.b)) for k in knobs if k.kind == "env"}
        files = tuple(sorted(k.key for k in knobs if k.kind == "code"))
        outside = {k.field: k.b for k in knobs if k.kind != "apply"}
        packages = {k.key: str(k.b) for k in knobs if k.kind == "package"}
        place = next((k.key for k in knobs if k.kind == "machine"), None)
        return Plan(by["apply"], by["option"], env, files, outside, packages, place)


def overrides_of(knobs: Sequence[Knob]) -> dict[str, Any]:
    """What a rerun set, by field: the ``overrides`` of the JSON contract (unredacted)."""
    return {k.field: k.b for k in knobs}


@dataclass(frozen=True)
class Shown:
    """Overrides as they may be stored and printed, and the values masked in them (masked again
    wherever else they show up: a progress line, a training's last line of output)."""

    values: Mapping[str, Any]
    secrets: frozenset[str]


def shown(overrides: Mapping[str, Any], secrets: frozenset[str] = frozenset()) -> Shown:
    """``overrides`` (field -> value) redacted as argv is: an option's value masked where its
    name says it is secret or the value looks like a secret; any other text likewise."""
    out: dict[str, Any] = {}
    found = set(secrets)
    for name, value in overrides.items():
        if isinstance(value, str):
            option = name[len(OPTION_PREFIX) :] if name.startswith(OPTION_PREFIX) else name
            masked = redact_option(option, value, set(found))
            if masked != value:
                found.add(value)
            out[name] = masked
        else:
            out[name] = value
    return Shown(out, frozenset(found))


def masked(text: str, secrets: frozenset[str]) -> str:
    """``text`` with the masked values of :func:`shown` and anything secret-shaped masked."""
    return redact_text(text, set(secrets))


@dataclass(frozen=True)
class Launch:
    """Everything one rerun does, before it runs: the code (commit, diff), the command line, the
    working directory, the variables it sets (None: unset) and its overrides as shown."""

    recipe: Recipe
    argv: tuple[str, ...]
    env: Mapping[str, str | None]
    apply: Mapping[str, Any]
    stop_after: int | None
    watch_steps: tuple[int, ...]
    timeout_s: float
    overrides: Shown
    files: tuple[str, ...] = ()
    python: str | None = None  # an environment built with other packages; None: this one

    def variables(self, uri: str, token: str | None) -> dict[str, str | None]:
        """The variables the rerun sets on top of this process's environment (None: unset)."""
        out: dict[str, str | None] = dict.fromkeys(CONTROL)
        out.update(self.env)
        out["MLFLOW_TRACKING_URI"] = uri
        out[settings.QUIET] = "1"
        # No detached describer: the command that launched the rerun compares it itself, and a
        # bisect's many reruns would each leave a process of seconds of CPU behind them.
        out[settings.DESCRIBE] = "0"
        out[settings.RERUN_OF] = self.recipe.run_id
        out[settings.RERUN_TOKEN] = token
        if self.apply:
            out[settings.APPLY] = json.dumps(dict(self.apply), sort_keys=True)
        if self.stop_after is not None:
            out[settings.STOP_AFTER] = str(self.stop_after)
        if self.watch_steps:
            out[settings.WATCH_STEPS] = ",".join(str(s) for s in self.watch_steps)
        return out

    def describe(self, uri: str) -> dict[str, Any]:
        """What a dry run prints: nothing secret, nothing run."""
        r = self.recipe
        secrets = self.overrides.secrets
        variables = self.variables(strip_url_credentials(uri), "<a fresh token per rerun>")
        if settings.APPLY in variables and variables[settings.APPLY] is not None:
            variables[settings.APPLY] = masked(str(variables[settings.APPLY]), secrets)
        return {
            "commit": r.commit,
            "diff_applied": r.diff is not None,
            "entry": {"kind": r.entry_kind, "module": r.module, "path": r.entry_path},
            "argv": [masked(a, secrets) for a in self.argv],
            "cwd": r.cwd,
            "env": {k: v for k, v in sorted(variables.items()) if v is not None},
            "env_unset": sorted(k for k, v in variables.items() if v is None),
            "overrides": dict(self.overrides.values),
            "files_from_b": list(self.files),
            "timeout_s": round(self.timeout_s, 1),
            **({"python": self.python} if self.python else {}),
        }


def launch_for(
    recipe: Recipe,
    plan: Plan,
    *,
    stop_after: int | None,
    watch_steps: tuple[int, ...],
    timeout_s: float,
    overrides: Mapping[str, Any],
) -> Launch:
    """The launch of ``recipe`` under ``plan``; a UsageError where the plan would set a variable
    a rerun may not set or the command line would still hold a masked secret."""
    for name, value in plan.env.items():
        if not process_may_set(name) or not settable_value(value):
            raise UsageError(f"a rerun does not set the environment variable {name}")
    argv = tuple(options_with(recipe.argv, plan.options))
    if any(MASK in arg for arg in argv):
        raise UsageError(
            f"run {recipe.run_id}'s command line held a secret (masked in its record): give it "
            "with --set program.options.NAME=VALUE to rerun it"
        )
    return Launch(
        recipe=recipe,
        argv=argv,
        env=dict(plan.env),
        apply=dict(plan.apply),
        stop_after=stop_after,
        watch_steps=watch_steps,
        timeout_s=timeout_s,
        overrides=shown(overrides),
        files=plan.files,
    )


@dataclass(frozen=True)
class Job:
    """A launch made concrete in a worktree: what an executor runs, where, with what, how long."""

    command: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    timeout_s: float
    secrets: frozenset[str] = frozenset()
    # For an executor that runs it elsewhere (prove/executors): the worktree the command's paths
    # lie in, the machine kind the node must be of (None: any), and whether the command's
    # interpreter is an environment built for the rerun's packages (the node must run that one).
    tree: Path | None = None
    kind: str | None = None
    built: bool = False


def located(tree: Path, origin: Path, rel: str, what: str, run_id: str) -> Path:
    """``tree / rel`` with its links resolved, where that stays inside the worktree (or, for a
    linked untracked file, inside the repository it was linked from)."""
    path = (tree / rel).resolve()
    roots = [tree.resolve(), origin.resolve()]
    if not any(path == root or root in path.parents for root in roots):
        raise UsageError(
            f"run {run_id}'s {what} {rel!r} leads to {path}, outside its repository: a rerun "
            "runs only what is inside the repository"
        )
    return path


def _namespace(spec: ModuleSpec) -> bool:
    """A folder without ``__init__.py``: Python joins it with every folder of that name on the
    search path, and prefers any regular package or module of the name found anywhere."""
    return spec.origin in (None, "namespace")


def _search_path_beyond(cwd: Path) -> list[str]:
    """Where the rerun's interpreter (this one, in this environment) looks for modules besides
    its working directory, which ``python -m`` puts first."""
    here = cwd.resolve()
    out = []
    for entry in sys.path:
        with contextlib.suppress(OSError, ValueError):
            if entry and Path(entry).resolve() != here:
                out.append(entry)
    return out


def module_file(module: str, cwd: Path, run_id: str) -> Path:
    """The file ``python -m module`` runs when started in ``cwd``, found by the rules it uses
    (``runpy``: each parent package, then the module or the package's ``__main__``) against
    ``cwd`` alone, without importing anything. A folder without ``__init__.py`` whose name also
    resolves outside ``cwd`` is refused: ``python -m`` would run what is installed under that
    name (``mlflow_fingerprint/cli/__main__.py`` alone runs the installed command), not it."""
    importlib.invalidate_caches()
    inside, outside = [str(cwd)], _search_path_beyond(cwd)
    names = module.split(".")
    spec = None
    for depth in range(len(names) + 1):
        if depth == len(names):  # a package: python -m runs its __main__
            if spec is None or spec.submodule_search_locations is None:
                break
            names.append("__main__")
        name = ".".join(names[: depth + 1])
        spec = PathFinder.find_spec(name, inside)
        if spec is None or (depth < len(names) - 1 and spec.submodule_search_locations is None):
            break
        if _namespace(spec) and outside and PathFinder.find_spec(name, outside) is not None:
            raise UsageError(
                f"run {run_id}'s module {module}: {name} in its repository is a folder without "
                f"__init__.py, and python -m would run the {name} installed outside it instead: "
                "a rerun runs only what is inside the repository"
            )
        if spec.submodule_search_locations is None:
            return Path(str(spec.origin))
        inside, outside = list(spec.submodule_search_locations), []
    raise UsageError(
        f"run {run_id}'s module {module} is not a file of its repository "
        f"(looked in {cwd}): a rerun runs only what is inside the repository"
    )


def command(launch: Launch, tree: Path, origin: Path, cwd: Path) -> list[str]:
    """The interpreter running this command (or the one of an environment built for it), on the
    run's script (or module) and arguments."""
    r = launch.recipe
    python = launch.python or sys.executable
    located(tree, origin, launch.argv[0], "argv[0]", r.run_id)
    if r.entry_kind == "module" and r.module:
        found = module_file(r.module, cwd, r.run_id)
        located(tree, origin, str(found), "module", r.run_id)
        return [python, "-m", r.module, *launch.argv[1:]]
    script = located(tree, origin, r.script, "entry point", r.run_id)
    return [python, str(script), *launch.argv[1:]]


def job_for(
    launch: Launch, tree: Path, origin: Path, uri: str, token: str, base: Mapping[str, str]
) -> Job:
    """The job of ``launch`` in ``tree``: its command and working directory checked to resolve
    inside it, its environment this process's with the rerun's variables set."""
    r = launch.recipe
    cwd = located(tree, origin, r.cwd, "working directory", r.run_id)
    if not cwd.is_dir():
        raise UsageError(f"run {r.run_id}'s working directory {r.cwd} is not in its code")
    env = dict(base)
    for name, value in launch.variables(uri, token).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    argv = command(launch, tree, origin, cwd)
    secrets = launch.overrides.secrets
    return Job(tuple(argv), cwd, env, launch.timeout_s, secrets, tree, built=bool(launch.python))
