"""One change, one difference: what a user changed, with the fields it switched beneath it.

``--lr 0.02`` reaches the record three times (``program.options.lr``, ``params.lr`` the program
logged, ``program.call.lr`` the training function got); ``--tf32 on`` shows as the option and as
``numerics.fp32_precision.cuda_matmul`` and ``.cudnn_conv``. Listed side by side they read as
several causes. Here each option that differs is one difference, and the fields it switched are
its consequences:

- by name: a field named like the option (``num-workers`` and ``data.loaders.0.num_workers``,
  ``lr`` and ``params.lr``, ``seed`` and the ``seeds.*`` fields);
- by elimination: where the code is the same (commit, uncommitted changes, entry point, imported
  sources) and exactly one option that differs set no field named like it (the others are
  accounted for by name), every other field a program sets (params, call arguments, loader
  settings, numerics and determinism flags, seeds) that differs was set by that option;
- a copied script: an edited copy run in place of the script (``python my_copy.py``) is one
  change headed by the entry point, with the entry's digest, both scripts' source entries and
  the option defaults the edit changed beneath it.

Without options, a call argument gathers the params named like it. A group takes the effect of
what its consequences do (a worker count that changes nothing makes its option change nothing);
an option whose consequences are unknown keeps its own.

An option one run did not pass, in a run whose defaults were not recorded (only its command line
was, ``program.options_source`` is ``argv``), has no known value there: it is marked unknown
rather than "absent", and ranks after every measured difference.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..model.fields import (
    CALL_ARGUMENTS,
    CODE,
    COMMITTED_CODE,
    DECLARED_DATA,
    LOADER,
    LOGGED_PARAMS,
    NOT_PROGRAM_SWITCHES,
    OPTIONS,
    PROGRAM_ARGV,
    PROGRAM_ENTRY,
    PROGRAM_ENTRY_PATH,
    PROGRAM_OPTIONS_SOURCE,
    PROGRAM_SEEDS,
    PROGRAM_SOURCES_COUNT,
    PROGRAM_SOURCES_DIGEST,
    PROGRAM_SOURCES_FILES,
    PROGRAM_SWITCHES,
    THREAD_COUNTS,
    WORKER_SETUP,
    covered,
)
from ..model.fingerprint import get_path, is_unavailable, unavailable
from ..model.missing import MISSING
from .fields import FieldChange
from .ranking import TIER
from .report import Difference


def set_by_program(path: str) -> str | None:
    """The name a field a program sets goes by (``data.loaders.0.num_workers``: num_workers);
    None for a field no option can set (hardware, versions, environment variables)."""
    for family in (LOGGED_PARAMS, CALL_ARGUMENTS, DECLARED_DATA):
        name = family.name(path)
        if name is not None:
            return name
    parts = path.split(".")
    if LOADER.covers(path) and len(parts) > len(LOADER.split(".")):
        return parts[3]
    if covered(path, PROGRAM_SEEDS):
        return "seed"
    if path in THREAD_COUNTS:
        return "threads"
    if any(path.startswith(f.prefix) for f in PROGRAM_SWITCHES) and not any(
        path.startswith(f.prefix) for f in NOT_PROGRAM_SWITCHES
    ):
        return parts[-1]
    return None


# An edited copy of the script (``compare._fold_copied_script``): its entry point, the fields
# the entry and its source entries fill, and the code that is not the entry.
ENTRY = PROGRAM_ENTRY_PATH
ENTRY_PART = PROGRAM_ENTRY.prefix
ARGV = PROGRAM_ARGV
SOURCE_FILES = PROGRAM_SOURCES_FILES.prefix
SOURCES_SUMMARY = (PROGRAM_SOURCES_DIGEST, PROGRAM_SOURCES_COUNT)
OPTIONS_KNOWN = ("decorator", "click", "argparse", "hydra")
UNKNOWN_DEFAULT = unavailable(
    "unknown: not on this run's command line, and its default was not recorded"
)
MIN_AFFIX = 4  # ``workers`` names ``num_workers``; ``lr`` names only ``lr``


def options_known(record: Mapping[str, Any]) -> bool:
    """The run recorded its options with their defaults, so an option it lacks does not exist
    in its program (rather than being left at an unrecorded default)."""
    return get_path(record, PROGRAM_OPTIONS_SOURCE) in OPTIONS_KNOWN


def mark_unknown_options(
    changes: Iterable[FieldChange], a: Mapping[str, Any], b: Mapping[str, Any]
) -> list[FieldChange]:
    """An option absent from a run whose defaults were not recorded has an unknown value."""
    out = []
    for change in changes:
        if change.path in OPTIONS:
            va = UNKNOWN_DEFAULT if change.a is MISSING and not options_known(a) else change.a
            vb = UNKNOWN_DEFAULT if change.b is MISSING and not options_known(b) else change.b
            change = FieldChange(change.path, va, vb)
        out.append(change)
    return out


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def names_match(option: str, field_name: str) -> bool:
    """``num-workers``/``num_workers``, ``workers``/``num_workers``, ``deterministic``/
    ``deterministic_algorithms``: equal, or one starts or ends the other (4 letters or more)."""
    o, f = _norm(option), _norm(field_name)
    if not o or not f:
        return False
    if o == f:
        return True
    short, long = sorted((o, f), key=len)
    return len(short) >= MIN_AFFIX and (long.startswith(short) or long.endswith(short))


def _option_name(d: Difference) -> str | None:
    return OPTIONS.name(d.field)


def _unknown(d: Difference) -> bool:
    return any(is_unavailable(v) or v is MISSING for v in (d.a, d.b))


def _head_order(d: Difference) -> int:
    """Which differences may gather others: measured options, call arguments, params; an
    option of unknown value last (a measured field named like it says more)."""
    if d.field in OPTIONS:
        return 3 if _unknown(d) else 0
    if d.field in CALL_ARGUMENTS:
        return 1
    if d.field in LOGGED_PARAMS:
        return 2
    return 9


def _own_name(d: Difference) -> str | None:
    for family in (OPTIONS, CALL_ARGUMENTS, LOGGED_PARAMS):
        name = family.name(d.field)
        if name is not None:
            return name
    return None


def _effect_of(head: Difference, consequences: Sequence[Difference], by_name: bool) -> str:
    """What the group does: its best-ranked consequence's effect where one changes results;
    nothing where it set only fields (named like it) that change nothing; else its own."""
    effective = [c for c in consequences if c.effect != "none"]
    if effective:
        return min(effective, key=lambda c: c.rank).effect
    return "none" if by_name and consequences else head.effect


def group(differences: Sequence[Difference]) -> tuple[Difference, ...]:
    """Differences with each user change's consequences folded under it, re-ranked 1..n."""
    pool = list(differences)
    heads = sorted(
        (d for d in pool if _head_order(d) < 9 and not (_option_name(d) and d.effect == "none")),
        key=lambda d: (_head_order(d), d.rank),
    )
    taken: set[str] = set()
    groups: dict[str, tuple[list[Difference], bool]] = {}
    for head in heads:
        if head.field in taken:
            continue
        name = _own_name(head)
        found = [
            d
            for d in pool
            if d.field != head.field
            and d.field not in taken
            and d.field not in groups
            and name is not None
            and (
                (d.field in OPTIONS and _unknown(d) and names_match(name, _own_name(d) or ""))
                or (
                    d.field not in OPTIONS
                    and (field_name := set_by_program(d.field)) is not None
                    and names_match(name, field_name)
                )
            )
        ]
        if found:
            taken.update(d.field for d in found)
            groups[head.field] = (found, True)
    _by_elimination(pool, groups, taken)
    _join_worker_setups(pool, groups, taken)
    _fold_copied_script(pool, groups, taken)
    out: list[Difference] = []
    for d in pool:
        if d.field in taken:
            continue
        consequences, by_name = groups.get(d.field, ([], False))
        if consequences:
            d = dataclasses.replace(
                d,
                effect=_effect_of(d, consequences, by_name),  # type: ignore[arg-type]
                consequences=tuple(sorted(consequences, key=lambda c: c.rank)),
            )
        out.append(d)
    out.sort(key=lambda d: (d.effect == "none", _hedged(d), TIER[d.effect], _best(d)))
    return tuple(_renumbered(d, i) for i, d in enumerate(out, start=1))


def _by_elimination(
    pool: Sequence[Difference],
    groups: dict[str, tuple[list[Difference], bool]],
    taken: set[str],
) -> None:
    """The code is the same and one option differs, or one of several set nothing named like it:
    it set every other field a program sets. An option of unknown value (on one command line
    only, its default not recorded) counts only where fields named like it show it acted."""
    options = [
        d
        for d in pool
        if d.field in OPTIONS
        and d.effect != "none"
        and d.field not in taken
        and (not _unknown(d) or d.field in groups)  # unknown: only where it is seen to act
    ]
    if any(covered(d.field, CODE) and d.effect != "none" for d in pool):
        return
    candidates = options if len(options) == 1 else [d for d in options if d.field not in groups]
    if len(candidates) != 1:
        return
    (head,) = candidates
    rest = [
        d
        for d in pool
        if d.field not in taken
        and d.field not in groups
        and d.field != head.field
        and d.field not in OPTIONS
        and set_by_program(d.field) is not None
    ]
    if rest:
        found, by_name = groups.get(head.field, ([], False))
        groups[head.field] = ([*found, *rest], by_name)
        taken.update(d.field for d in rest)


def _worker_setup_of(path: str) -> str | None:
    """The loader whose worker set-up ``path`` is part of (``data.loaders.0``), else None."""
    setup = next((p for p in WORKER_SETUP if p.covers(path)), None)
    return setup.stem(path).rsplit(".", 1)[0] if setup is not None else None


def _starts_workers(option: Difference, groups: dict[str, tuple[list[Difference], bool]]) -> bool:
    """The option set the worker count: the change the seeding options hang on."""
    return any(c.field.endswith(".num_workers") for c in groups[option.field][0])


def _join_worker_setups(
    pool: Sequence[Difference],
    groups: dict[str, tuple[list[Difference], bool]],
    taken: set[str],
) -> None:
    """Options that set only one loader's worker set-up are one change: ``--num-workers 2
    --no-seed-workers`` starts workers and leaves them unseeded, and their seeding means
    nothing without them. The option that set the worker count heads the change (else the
    best-ranked); the others, with what they set, are folded under it. ``--batch-size`` beside
    ``--num-workers`` stays two changes: the batch size is no part of the workers."""
    by_loader: dict[str, list[Difference]] = {}
    for d in pool:
        consequences, _ = groups.get(d.field, ([], False))
        if d.field not in OPTIONS or d.field in taken or not consequences:
            continue
        # params and call arguments named like the option echo it; what it set is the rest
        loaders = {
            _worker_setup_of(c.field)
            for c in consequences
            if not (c.field in LOGGED_PARAMS or c.field in CALL_ARGUMENTS)
        }
        if len(loaders) == 1 and None not in loaders:
            by_loader.setdefault(str(loaders.pop()), []).append(d)
    for options in by_loader.values():
        if len(options) < 2:
            continue
        head, *joined = sorted(options, key=lambda d: (not _starts_workers(d, groups), d.rank))
        found, by_name = groups[head.field]
        for option in joined:
            found += [option, *groups.pop(option.field)[0]]
            taken.add(option.field)
        groups[head.field] = (found, by_name)


def _command_line_names(pool: Sequence[Difference]) -> set[str]:
    """The option names either run's command line spells (``--lr 0.1``, ``--lr=0.1``); none
    where the command lines are equal (``program.argv`` is then no difference)."""
    names: set[str] = set()
    for d in pool:
        if d.field == ARGV:
            for argv in (d.a, d.b):
                if isinstance(argv, list):
                    names |= {_norm(str(t).split("=")[0]) for t in argv if str(t).startswith("-")}
    return names


def _fold_copied_script(
    pool: Sequence[Difference],
    groups: dict[str, tuple[list[Difference], bool]],
    taken: set[str],
) -> None:
    """A copy of the script, edited and run (``python my_copy.py``), is one change: where the
    entry points differ and the rest of the code (commit, uncommitted changes) does not, the
    entry's digest, the two scripts' source entries and every option default the edit changed
    (an option that differs but neither command line names) are what that change did. Where no
    option the command lines set differs, the other fields a program sets that differ (call
    arguments, params, seeds, flags) were set by the edited code too."""
    entry = next((d for d in pool if d.field == ENTRY and d.field not in taken), None)
    if entry is None or entry.effect == "none" or _unknown(entry):
        return
    if any(covered(d.field, COMMITTED_CODE) and d.effect != "none" for d in pool):
        return
    scripts = {f"{SOURCE_FILES}{path}" for path in (entry.a, entry.b) if isinstance(path, str)}
    spelled = _command_line_names(pool)

    def edited(d: Difference) -> bool:
        name = _option_name(d)
        if name is not None:
            return _norm(name) not in spelled
        return d.field.startswith(ENTRY_PART) or d.field in scripts or d.field in SOURCES_SUMMARY

    free = [d for d in pool if d.field not in taken and d.field != ENTRY]
    folded = [d for d in free if edited(d)]
    left = [d for d in free if d.field in OPTIONS and d.effect != "none" and d not in folded]
    if not left:
        folded += [d for d in free if d not in folded and set_by_program(d.field) is not None]
    if not folded:
        return
    found, by_name = groups.get(entry.field, ([], False))
    for d in folded:
        found += [d, *groups.pop(d.field, ([], False))[0]]
        taken.add(d.field)
    groups[entry.field] = (found, by_name)


def _hedged(d: Difference) -> bool:
    """Known only on one side, and nothing measured on both sides beneath it."""
    measured = [c for c in d.consequences if c.effect != "none" and not _unknown(c)]
    return _unknown(d) and not measured


def _best(d: Difference) -> int:
    """Where a group ranked before grouping: its best member's place."""
    return min([d.rank, *(c.rank for c in d.consequences if c.effect != "none")])


def _renumbered(d: Difference, rank: int) -> Difference:
    return dataclasses.replace(
        d,
        rank=rank,
        consequences=tuple(dataclasses.replace(c, rank=rank) for c in d.consequences),
    )


def flat(differences: Iterable[Difference]) -> list[Difference]:
    """Every difference, consequences included (what a rerun could set)."""
    return [x for d in differences for x in (d, *d.consequences)]
