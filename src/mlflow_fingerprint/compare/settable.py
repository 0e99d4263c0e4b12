"""Which differences between two runs a rerun can set, and how (docs/design.md, "Controlled
reruns").

A rerun of run A can take one of run B's values through four doors: a setting the decorator
forces at start (``MLFLOW_FINGERPRINT_APPLY``: seed, deterministic mode, cuDNN flags, fp32
precision, threads, DataLoader workers and seeding, numerics environment variables), a
command-line option, a file of B's code, or an environment variable the process reads before it
starts (thread pools, and any variable of the program's own recorded in ``program.env``). Each is
a :class:`Knob`. Hardware, driver, CUDA, cuDNN, torch, packages and the CPU cannot be set by a
rerun: those differences are listed as such, never tested. Nor can a variable the interpreter or
the loader reads (``model.variables``), whatever a record says it held: a record is input, and
``PYTHONPATH`` or ``LD_PRELOAD`` would run code; nor one recorded as a digest (a secret).

Many recorded fields are consequences of a knob rather than knobs (the torch seed follows the
requested seed or the code; a batch size follows an option or the code; the sources' digests
follow the files): they are not tested on their own, so a bisect counts only what it can set.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..model.fields import (
    APPLIED,
    APPLIED_FAMILIES,
    APPLIED_LOADER,
    DATA_GENERATOR_SEED,
    DATA_NUM_WORKERS,
    FOLLOWS,
    FOLLOWS_EXACTLY,
    NOISE,
    NOISE_BELOW,
    NOISE_NAMES,
    OPTIONS,
    PACKAGE_VERSIONS,
    PROCESS_VARIABLES,
    PROGRAM_SOURCES_FILES,
    PROGRAM_VARIABLES,
    PYTHON_IMPLEMENTATION,
    PYTHON_VERSION,
    SEEDS_REQUESTED,
)
from ..model.fingerprint import is_unavailable
from ..model.missing import MISSING
from ..model.variables import (
    RECORDED_ELSEWHERE,
    digested,
    env_field_name,
    process_may_set,
    rerun_may_set,
    settable_value,
)
from ..model.vocabulary import Effect
from ..redact import MASK
from .report import Difference

# "package": B's version of a distribution, in an environment built for it (prove/package_sets.py);
# "machine": the node a rerun runs on, where a cluster offers B's kind (prove/placement.py).
KnobKind = Literal["apply", "option", "code", "env", "package", "machine"]

# A version a rerun may ask an index for (PEP 440 and local labels: ``2.1.0+cu121``).
VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}")
# What says which interpreter ran: where A's and B's differ, no package set of B's is built.
INTERPRETER = (PYTHON_VERSION, PYTHON_IMPLEMENTATION)


def _applied(path: str) -> bool:
    """A field the decorator forces as it is named (``run/apply.py``)."""
    return path in APPLIED or any(path in family for family in APPLIED_FAMILIES)


def _follows(path: str) -> bool:
    """A consequence of the knobs or of the code: compared, never set on its own."""
    return any(path.startswith(f.prefix) for f in FOLLOWS) or path in FOLLOWS_EXACTLY


def _noise(path: str) -> bool:
    """A field that differs on every run and says nothing."""
    return path in NOISE or path.startswith(NOISE_BELOW.prefix) or path.endswith(NOISE_NAMES)


@dataclass(frozen=True)
class Knob:
    """One thing a rerun of A can switch to B's value.

    ``key`` is what the rerun sets: an APPLY field, an option name, a file path or an environment
    variable; ``field`` the record's field a report names; ``b`` the value it takes."""

    kind: KnobKind
    key: str
    field: str
    a: Any
    b: Any
    effect: Effect

    def label(self) -> str:
        return f"{self.field}={_shown(self.b)}"


def _shown(value: object) -> str:
    if value is MISSING or value is None:
        return "absent"
    return str(value)


@dataclass(frozen=True)
class Split:
    """A's differences from B, sorted by what a rerun can do about them."""

    knobs: tuple[Knob, ...]
    cannot_set: tuple[Difference, ...]
    no_effect: tuple[Difference, ...]


def _plain(value: object) -> Any:
    return None if value is MISSING or is_unavailable(value) else value


def _loader_knob(d: Difference) -> Knob | None:
    if d.field.endswith("num_workers") and isinstance(d.b, int):
        return Knob("apply", DATA_NUM_WORKERS, d.field, _plain(d.a), d.b, d.effect)
    if d.field.endswith("initial_seed") and isinstance(d.b, int):
        return Knob("apply", DATA_GENERATOR_SEED, d.field, _plain(d.a), d.b, d.effect)
    return None


def refused(d: Difference) -> bool:
    """A recorded value a rerun may not set: an environment variable outside the allowlist, a
    value no environment should take from a record (a NUL, a newline, a page of text), or an
    option whose value the record holds masked (a secret: B's real value is not known)."""
    if d.field in OPTIONS and MASK in str(d.b):
        return True
    if (variable := PROGRAM_VARIABLES.name(d.field)) is not None:
        value = _plain(d.b)
        return (
            not process_may_set(variable)
            or not settable_value(value)
            or digested(_plain(d.a))
            or digested(value)
        )
    name = env_field_name(d.field)
    if name is None:
        return False
    return not rerun_may_set(name) or not settable_value(_plain(d.b))


def knob_for(d: Difference) -> Knob | None:
    """The knob that sets ``d`` to B's value; None where none does."""
    if refused(d):
        return None
    if _applied(d.field):
        if d.b is MISSING or is_unavailable(d.b) or (d.field == SEEDS_REQUESTED and d.b is None):
            return None  # a rerun can force a value, not take one away
        return Knob("apply", d.field, d.field, _plain(d.a), d.b, d.effect)
    if any(p.matches(d.field) for p in APPLIED_LOADER):
        return _loader_knob(d)
    if (option := OPTIONS.name(d.field)) is not None:
        if option == "_":
            return None  # positional arguments follow the code, not an option
        return Knob("option", option, d.field, _plain(d.a), _plain(d.b), d.effect)
    if (variable := PROCESS_VARIABLES.name(d.field)) is not None:
        return Knob("env", variable, d.field, _plain(d.a), _plain(d.b), d.effect)
    variable = PROGRAM_VARIABLES.name(d.field)
    if variable is not None and variable not in RECORDED_ELSEWHERE:
        return Knob("env", variable, d.field, _plain(d.a), _plain(d.b), d.effect)
    package = PACKAGE_VERSIONS.name(d.field)
    if package is not None and isinstance(d.b, str) and VERSION.fullmatch(d.b):
        a = d.a if isinstance(d.a, str) and VERSION.fullmatch(d.a) else None
        return Knob("package", package, d.field, a, d.b, d.effect)
    return None


def split(differences: Sequence[Difference]) -> Split:
    """Knobs (one per key: every loader's worker count is one setting), what cannot be set, and
    what does not change results (a run name: never rerun, whatever its spelling)."""
    knobs: dict[tuple[KnobKind, str], Knob] = {}
    cannot: list[Difference] = []
    none: list[Difference] = []
    # Another interpreter: B's packages are built for B's Python, never for A's.
    other_python = any(d.field in INTERPRETER for d in differences)
    for d in differences:
        if other_python and d.field in PACKAGE_VERSIONS:
            cannot.append(d)
            continue
        if refused(d):  # listed whatever its effect: a rerun does not touch it
            cannot.append(d)
            continue
        # A package's rule says whether it usually computes tensors; a rerun can test it, so
        # a package the program reads (a constant, a default) is searched whatever the rule.
        # So is a variable of the program's own that nothing showed was read: only a rerun can.
        searched = d.field in PACKAGE_VERSIONS or d.field in PROGRAM_VARIABLES
        knob = knob_for(d) if d.effect != "none" or searched else None
        if knob is not None:
            knobs.setdefault((knob.kind, knob.key), knob)
        elif d.field in PACKAGE_VERSIONS:
            cannot.append(d)  # B lacks it (an environment adds, never takes away), or crafted
        elif d.effect == "none":
            if not _noise(d.field):
                none.append(d)
        elif not _follows(d.field):
            cannot.append(d)
    return Split(tuple(knobs.values()), tuple(cannot), tuple(none))


def recorded_env(knobs: Sequence[Knob]) -> dict[str, str | None]:
    """A's values of the program's own variables among ``knobs``: what every rerun of A starts
    with (A as recorded, not as this shell has them), B's value replacing one where a knob sets
    it; None where A did not have it."""
    return {
        k.key: None if k.a is None else str(k.a)
        for k in knobs
        if k.kind == "env" and k.field in PROGRAM_VARIABLES
    }


def code_knobs(changed: Mapping[str, tuple[str | None, str | None]]) -> tuple[Knob, ...]:
    """One knob per file whose content differs between A's code and B's: {path: (a, b)} digests,
    None where the file is absent on that side."""
    return tuple(
        Knob("code", path, PROGRAM_SOURCES_FILES.child(path), a, b, "recipe")
        for path, (a, b) in sorted(changed.items())
    )


def options_with(argv: Sequence[str], changes: Mapping[str, Any]) -> list[str]:
    """``argv`` with each option in ``changes`` given its new value: replaced where present
    (``--name value`` or ``--name=value``), appended where absent, removed where the value is
    None; ``True`` is a bare flag."""
    out = [argv[0]] if argv else []
    done: set[str] = set()
    i = 1
    while i < len(argv):
        arg = argv[i]
        name, eq, _ = arg.lstrip("-").partition("=")
        if arg.startswith("-") and name in changes:
            takes_value = not eq and i + 1 < len(argv) and not argv[i + 1].startswith("--")
            i += 2 if takes_value else 1
            done.add(name)
            out.extend(_spelled(arg[: len(arg) - len(arg.lstrip("-"))] + name, changes[name]))
            continue
        out.append(arg)
        i += 1
    for name, value in changes.items():
        if name not in done:
            out.extend(_spelled(("--" if len(name) > 1 else "-") + name, value))
    return out


def _spelled(option: str, value: object) -> list[str]:
    if value is None or value is False:
        return []
    if value is True:
        return [option]
    return [option, str(value)]
