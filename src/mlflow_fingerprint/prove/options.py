"""What ``rerun`` and ``bisect`` take, as frozen objects built once and checked when built: the
Python API builds them from its keywords, the command line from its options, and everything
below takes the object rather than eight loose keywords, so a new option is one field here.

``Reruns`` holds what the two share (where reruns stop, how long they may run, where they run);
``RerunOptions`` adds the values a rerun forces (``--set``), ``BisectOptions`` how many reruns
run at once (``--jobs``). A bad value is one ``UsageError`` line at construction, before any
store, worktree or process is touched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from .. import limits
from ..compare.settable import Knob
from ..errors import UsageError
from .launch import OPTION_PREFIX
from .process import Executor

T = TypeVar("T")

Progress = Callable[[str], None]


def checked(check: Callable[[str, Any], T], name: str, value: Any) -> T:
    """``check(name, value)``, its refusal one line of bad input."""
    try:
        return check(name, value)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def knobs_of(values: Mapping[str, Any]) -> list[Knob]:
    """Overrides (field -> value) as knobs: a setting the decorator forces (typed and checked by
    the parser it uses) or a command-line option (``program.options.NAME``; None removes the
    option, True makes it a bare flag)."""
    from ..run.apply import parse_override

    knobs = []
    for name, value in values.items():
        if not isinstance(name, str) or not name:
            raise UsageError(f"an override is FIELD=VALUE, not {name!r}")
        if name.startswith(OPTION_PREFIX) and len(name) > len(OPTION_PREFIX):
            option = value if value is None or isinstance(value, bool) else str(value)
            knobs.append(Knob("option", name[len(OPTION_PREFIX) :], name, None, option, "recipe"))
            continue
        key, typed = parse_override(name, _text(value))
        knobs.append(Knob("apply", key, name, None, typed, "recipe"))
    return knobs


@dataclass(frozen=True)
class Reruns:
    """What ``rerun`` and ``bisect`` take alike.

    ``until_step``: stop each rerun once a metric past that step is logged. ``timeout``: seconds
    each rerun may run (default 3x the run's wall time plus 2 minutes). ``dry_run``: say what
    would run, run nothing. ``tracking_uri``/``experiment``: where the runs are found.
    ``repo``: the clone of the runs' repository (default: the one the working directory is in).
    ``executor``: where reruns run (default: here). ``progress``: called with each line said
    while reruns run (default: nothing said)."""

    until_step: int | None = None
    timeout: float | None = None
    dry_run: bool = False
    tracking_uri: str | None = None
    experiment: str | None = None
    repo: str | Path | None = None
    executor: Executor | None = None
    progress: Progress | None = None

    def __post_init__(self) -> None:
        if self.until_step is not None:
            checked(limits.check_step, "until_step", self.until_step)
        if self.timeout is not None:
            checked(limits.check_seconds, "timeout", self.timeout)


def _no_values() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class RerunOptions(Reruns):
    """What ``rerun`` takes: ``Reruns`` and ``set``, the field -> value pairs the rerun forces
    (``seeds.requested``, ``determinism.*``, ``data.*``, ``program.options.NAME``, ...), checked
    as the training will read them."""

    set: Mapping[str, Any] = field(default_factory=_no_values)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "set", MappingProxyType(dict(self.set)))
        self.knobs()

    def knobs(self) -> list[Knob]:
        """``set`` as the knobs a rerun turns."""
        return knobs_of(self.set)


@dataclass(frozen=True)
class BisectOptions(Reruns):
    """What ``bisect`` takes: ``Reruns`` and ``jobs``, the reruns run at once (default: what the
    executor can hold; locally the free cores)."""

    jobs: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        jobs = self.jobs
        if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
            raise UsageError(f"jobs must be a whole number of 1 or more, not {jobs!r}")
