"""What a rerun and a bisect conclude: frozen records whose ``to_dict()`` is the JSON the command
line prints (docs/design.md, "Controlled reruns"), and which the renderers read.

Every value a record holds is shown as it may be stored: overrides redacted (``launch.shown``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..model.vocabulary import BISECT_VERDICTS, MATCHES, BisectVerdict, Match, check

EXIT_PROVEN = 0
EXIT_NOT_PROVEN = 1


@dataclass(frozen=True)
class Rerun:
    """One rerun made by a bisect: what it set, and whose curve it followed."""

    run_id: str
    overrides: Mapping[str, Any]
    matches: Match
    first_divergence_step: int | None  # where it parted from A's curve; None: it did not
    stopped_at: int | None = None
    # The fields of A's difference from B that had B's value in this rerun (as its own record
    # shows, and the knobs it set): what a rerun that follows A's curve rules out.
    in_effect: frozenset[str] = frozenset()
    wall_s: float | None = None

    def __post_init__(self) -> None:
        check(self.matches, MATCHES, "rerun match")

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "overrides": dict(self.overrides),
            "matches": self.matches,
            "first_divergence_step": self.first_divergence_step,
            "stopped_at": self.stopped_at,
            "wall_s": None if self.wall_s is None else round(self.wall_s, 2),
        }


@dataclass(frozen=True)
class Cause:
    """A proven cause: the knob, and the recorded settings it changed on its way (an option
    ``--seed`` that set ``seeds.requested``)."""

    field: str
    a: Any
    b: Any
    effect: str
    sets: tuple[str, ...] = ()


@dataclass(frozen=True)
class BisectResult:
    """A bisect's conclusion. ``proven`` always names at least one cause; ``not_settable`` lists
    in ``cannot_set`` what a rerun could not set; ``ruled_out`` and ``cannot_set`` are always
    there, empty or not."""

    verdict: BisectVerdict
    a: str
    b: str
    until_step: int | None
    causes: tuple[Cause, ...] = ()
    ruled_out: tuple[str, ...] = ()
    cannot_set: tuple[str, ...] = ()
    reruns: tuple[Rerun, ...] = ()
    notes: tuple[str, ...] = ()
    # How the reruns ran: rounds of reruns side by side, up to ``jobs`` at a time, in ``wall_s``.
    rounds: int = 0
    jobs: int = 1
    wall_s: float = 0.0

    def __post_init__(self) -> None:
        check(self.verdict, BISECT_VERDICTS, "bisect verdict")
        if self.verdict == "proven" and not self.causes:
            raise ValueError("a proven bisect names at least one cause")

    @property
    def exit_code(self) -> int:
        return EXIT_PROVEN if self.causes else EXIT_NOT_PROVEN

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of docs/design.md, plus the step the reruns stopped after and notes."""
        return {
            "verdict": self.verdict,
            "a": self.a,
            "b": self.b,
            "until_step": self.until_step,
            "causes": [
                {"field": c.field, "a": c.a, "b": c.b, "effect": c.effect, "sets": list(c.sets)}
                for c in self.causes
            ],
            "ruled_out": list(self.ruled_out),
            "cannot_set": list(self.cannot_set),
            "reruns": [r.to_dict() for r in self.reruns],
            "notes": list(self.notes),
            "rounds": self.rounds,
            "jobs": self.jobs,
            "wall_s": round(self.wall_s, 1),
        }

    def cost(self) -> str:
        """``6 reruns in 2 rounds (up to 4 at a time), 41.2 s``: what the proof took."""
        return (
            f"{len(self.reruns)} rerun(s) in {self.rounds} round(s) (up to {self.jobs} at a "
            f"time), {self.wall_s:.1f} s"
        )


@dataclass(frozen=True)
class MachineGap:
    """How this machine differs from a run's in what no rerun can set."""

    field: str
    run: Any
    here: Any


@dataclass(frozen=True)
class RerunResult:
    """A rerun of one run and whether it reproduced it: every curve equal, bit for bit, up to the
    step it stopped after (and, for a rerun that ran to its end, the summary values too)."""

    run_id: str
    rerun_of: str
    overrides: Mapping[str, Any]
    reproduced: bool
    first_divergence_step: int | None
    stopped_at: int | None
    until_step: int | None
    machine_differs: tuple[MachineGap, ...] = ()
    summary_differs: tuple[str, ...] = ()  # summary metrics whose final values differ
    wall_s: float | None = None
    notes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return 0 if self.reproduced else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "rerun_of": self.rerun_of,
            "overrides": dict(self.overrides),
            "reproduced": self.reproduced,
            "first_divergence_step": self.first_divergence_step,
            "summary_differs": list(self.summary_differs),
            "stopped_at": self.stopped_at,
            "until_step": self.until_step,
            "machine_differs": [
                {"field": g.field, "run": g.run, "here": g.here} for g in self.machine_differs
            ],
            "wall_s": None if self.wall_s is None else round(self.wall_s, 2),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class DryRun:
    """What a rerun or a bisect would do, run by nothing: each launch it would start (its
    commit, entry, argv, working directory, variables and overrides), and for a bisect which
    differences it would set and which it could not."""

    command: str  # rerun | bisect
    runs: tuple[str, ...]
    launches: tuple[tuple[str, Mapping[str, Any]], ...]  # (what it is, Launch.describe())
    settable: tuple[Mapping[str, Any], ...] = ()
    cannot_set: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    until_step: int | None = None

    @property
    def exit_code(self) -> int:
        return 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": True,
            "command": self.command,
            "runs": list(self.runs),
            "until_step": self.until_step,
            "launches": [{"what": what, **launch} for what, launch in self.launches],
            "settable": [dict(s) for s in self.settable],
            "cannot_set": list(self.cannot_set),
            "notes": list(self.notes),
        }
