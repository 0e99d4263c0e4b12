"""Rules for the recipe a user changes without git: the command line, the entry point, the
project's imported sources, the decorated function's arguments, the MLflow params each run logged
(``params.<name>``, added by ``resolve``) and who seeded torch (docs/design.md, "The recipe").

Each explanation names the option, file or param and both values, e.g. ``argument --lr: 0.05 vs
0.02``, because the user needs to see *which* of their own settings differed.

Priorities 1300-1460: after every other subject's, since within one effect class and prior a
named setting of the environment is the likelier explanation to read first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...model.fields import (
    DATA_LOADERS_EACH_BATCHES_SEEN,
    GIT_UNTRACKED_COUNT,
    GIT_UNTRACKED_FILES,
    PARAMS_EACH,
    PROGRAM_ARGV,
    PROGRAM_CALL,
    PROGRAM_CALL_EACH,
    PROGRAM_ENTRY_KIND,
    PROGRAM_ENTRY_MODULE,
    PROGRAM_ENTRY_PATH,
    PROGRAM_ENTRY_SHA256,
    PROGRAM_ENV,
    PROGRAM_ENV_EACH,
    PROGRAM_ENV_VOLATILE,
    PROGRAM_OPTIONS,
    PROGRAM_OPTIONS_EACH,
    PROGRAM_SOURCES_COUNT,
    PROGRAM_SOURCES_DIGEST,
    PROGRAM_SOURCES_FILES_EACH,
    PROGRAM_SOURCES_TRUNCATED_AT,
    SEEDS_ORIGIN,
)
from ...model.fingerprint import get_path, is_unavailable
from ...model.hashing import BOOKKEEPING_OPTIONS
from ...model.missing import MISSING
from ...model.sections import Git, Program
from .. import citations as cite
from ..conditions import Context, Outcome, same_seed
from .base import Rule

RECIPE = cite.PROGRAM
NONE_CLASS = cite.NOT_ARITHMETIC


def shown(value: Any) -> str:
    """A value as a person reads it in a sentence."""
    if value is MISSING or value is None:
        return "absent"
    if is_unavailable(value):
        reason = value.get("unavailable")
        if isinstance(reason, str) and reason.startswith("unknown"):
            return "unknown (not passed, and its default was not recorded)"
        return "not recorded"
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    return str(value)


def _last(ctx: Context) -> str:
    return ctx.change.path.split(".", 2)[-1]


BOOKKEEPING = frozenset(BOOKKEEPING_OPTIONS)


def option(ctx: Context) -> Outcome:
    """``argument --lr: 0.05 vs 0.02``; a one-letter option keeps its single dash."""
    name = _last(ctx)
    if name.replace("-", "_") in BOOKKEEPING:
        return Outcome(
            "none",
            f"argument --{name}: {shown(ctx.change.a)} vs {shown(ctx.change.b)} says where the "
            "run is recorded or written, not how it trains.",
        )
    if name == "_":
        return Outcome(
            "recipe",
            f"positional arguments: {shown(ctx.change.a)} vs {shown(ctx.change.b)}",
        )
    dashes = "-" if len(name) == 1 else "--"
    return Outcome(
        "recipe", f"argument {dashes}{name}: {shown(ctx.change.a)} vs {shown(ctx.change.b)}"
    )


def argv(ctx: Context) -> Outcome:
    """The whole command line. Where both parsed into options, the options and the entry point
    are compared one by one and this adds nothing; otherwise it is the only record of the
    difference."""
    a, b = ctx.change.a, ctx.change.b
    if all(Program.from_record(r).options is not None for r in (ctx.a, ctx.b)):
        return Outcome(
            "none",
            f"command line: `{shown(a)}` vs `{shown(b)}`; its options and entry point are "
            "compared one by one.",
        )
    return Outcome("recipe", f"command line: `{shown(a)}` vs `{shown(b)}`", prior=2)


def untracked(record: Mapping[str, Any], path: Any) -> bool:
    """``path`` (relative to the repository root) is among the run's untracked files, or in an
    untracked directory (``git status`` lists ``dir/``). A record is input: an entry that is
    not a path (a damaged or crafted record) names nothing."""
    if not isinstance(path, str):
        return False
    names = Git.from_record(record).untracked_files
    return any(path == u or (u.endswith("/") and path.startswith(u)) for u in names)


def _tracked(record: Mapping[str, Any]) -> str:
    return " (untracked)" if untracked(record, get_path(record, PROGRAM_ENTRY_PATH)) else ""


def entry_path(ctx: Context) -> Outcome:
    """``entry point: train.py vs my_experiment.py (untracked)``."""
    a = f"{shown(ctx.change.a)}{_tracked(ctx.a)}"
    b = f"{shown(ctx.change.b)}{_tracked(ctx.b)}"
    same = get_path(ctx.a, PROGRAM_ENTRY_SHA256) == get_path(ctx.b, PROGRAM_ENTRY_SHA256)
    content = "same content" if same else "different content"
    return Outcome("recipe", f"entry point: {a} vs {b} ({content})", prior=3)


def entry_content(ctx: Context) -> Outcome:
    """Same script name, different content: the script itself was edited."""
    pa, pb = (get_path(r, PROGRAM_ENTRY_PATH) for r in (ctx.a, ctx.b))
    if pa == pb:
        return Outcome(
            "recipe",
            f"entry point {shown(pa)}{_tracked(ctx.b) or _tracked(ctx.a)}: its content differs "
            f"({shown(ctx.change.a)} vs {shown(ctx.change.b)})",
            prior=3,
        )
    return Outcome(
        "recipe",
        f"the entry points {shown(pa)} and {shown(pb)} differ in content too",
        prior=1,
    )


def source_file(ctx: Context) -> Outcome:
    """``source model.py: content differs`` or ``imported only by A``."""
    path = ctx.change.path.split(".", 3)[-1]
    flag = " (untracked)" if untracked(ctx.a, path) or untracked(ctx.b, path) else ""
    a, b = ctx.change.a, ctx.change.b
    if a is MISSING or b is MISSING:
        only = "A" if b is MISSING else "B"
        return Outcome("recipe", f"source {path}{flag}: imported only by {only}", prior=2)
    return Outcome("recipe", f"source {path}{flag}: its content differs ({a} vs {b})", prior=2)


def call_argument(ctx: Context) -> Outcome:
    """``call argument lr: 0.05 vs 0.02``: the decorated function was called differently."""
    name = _last(ctx)
    return Outcome(
        "recipe",
        f"call argument {name}: {shown(ctx.change.a)} vs {shown(ctx.change.b)}",
        prior=3,
    )


def param(ctx: Context) -> Outcome:
    """``param momentum: 0.9 vs 0.0``: a value the run logged to MLflow itself."""
    name = ctx.change.path.split(".", 1)[-1]
    return Outcome(
        "recipe", f"param {name}: {shown(ctx.change.a)} vs {shown(ctx.change.b)}", prior=3
    )


ORIGIN_WORDS = {
    "decorator": "seeded by the decorator",
    "program": "seeded by the program",
    "unseeded": "not seeded",
}


def origin(ctx: Context) -> Outcome:
    same = same_seed(ctx)
    if same is not None:
        return same
    a, b = (ORIGIN_WORDS.get(str(v), shown(v)) for v in (ctx.change.a, ctx.change.b))
    return Outcome(
        "randomness",
        f"A was {a}, B was {b}: their random streams (initial weights, data order, dropout) "
        "start from different seeds.",
        prior=3,
    )


# Where a value the program read shows up: what it logged and what it was called with.
READ_INTO = ("params", PROGRAM_OPTIONS, PROGRAM_CALL)


def _carried_by(record: Mapping[str, Any], value: Any) -> set[tuple[str, str]]:
    """The params, options and call arguments (section, name) whose value is ``value`` (as text)."""
    found = set()
    for section in READ_INTO:
        values = get_path(record, section)
        if isinstance(values, Mapping):
            found |= {(section, str(k)) for k, v in values.items() if str(v) == str(value)}
    return found


def _held(record: Mapping[str, Any], where: tuple[str, str]) -> str | None:
    values = get_path(record, where[0])
    if not isinstance(values, Mapping) or where[1] not in values:
        return None
    return str(values[where[1]])


def _read_into(
    a: Mapping[str, Any], b: Mapping[str, Any], va: Any, vb: Any
) -> tuple[set[tuple[str, str]], str]:
    """The fields that show a variable valued ``va`` in A and ``vb`` in B was read, and in which
    runs. A side without the variable ran on the program's default, so only the other side can
    show it; there the field must also differ from the first side's (a ``2`` that every run logs
    as its worker count is no evidence)."""
    # unavailable: an older record, from before the environment was recorded
    present = [v is not MISSING and not is_unavailable(v) for v in (va, vb)]
    if all(present):
        return _carried_by(a, va) & _carried_by(b, vb), "in both runs"
    if not any(present):
        return set(), ""
    (record, value, other) = (a, va, b) if present[0] else (b, vb, a)
    has, lacks = ("A", "B") if present[0] else ("B", "A")
    carried = {w for w in _carried_by(record, value) if _held(other, w) != str(value)}
    return carried, f"in {has}, and another in {lacks}, which ran without it"


def _same_name(variable: str, key: str) -> bool:
    """``LR_SCALE`` and ``lr-scale``, ``lr_scale`` or ``lrScale``: one knob under two spellings."""

    def fold(text: str) -> str:
        return "".join(ch for ch in text.lower() if ch.isalnum())

    return fold(variable) == fold(key)


def _rivals(
    ctx: Context, name: str, carried: set[tuple[str, str]]
) -> dict[str, set[tuple[str, str]]]:
    """The other variables that differ between the runs and whose value the same fields hold:
    which of them the program read, the record alone cannot tell."""
    env_a, env_b = get_path(ctx.a, PROGRAM_ENV), get_path(ctx.b, PROGRAM_ENV)
    env_a = env_a if isinstance(env_a, Mapping) else {}
    env_b = env_b if isinstance(env_b, Mapping) else {}
    found: dict[str, set[tuple[str, str]]] = {}
    for other in sorted((set(env_a) | set(env_b)) - {name}):
        va, vb = env_a.get(other, MISSING), env_b.get(other, MISSING)
        if va == vb:
            continue
        shared = _read_into(ctx.a, ctx.b, va, vb)[0] & carried
        if shared:
            found[other] = shared
    return found


def variable(ctx: Context) -> Outcome:
    """``variable MOMENTUM: 0.9 vs 0.5``. Every variable of the process is recorded, and two
    runs differ in many nobody reads (a harness's, a scheduler's): one is a cause only where the
    run shows it was read, a param, an option or a call argument holding its value (see
    ``_read_into``). Where another differing variable has the same values, the field is
    credited to the one it is named after (``LR_SCALE`` for ``params.lr_scale``); with no such
    name both stay candidates, and the explanation says a rerun must tell. Otherwise the
    variable is listed as a difference nothing shows was read (an unexplained pair names it
    among what the record cannot rule out)."""
    name = _last(ctx)
    values = f"variable {name}: {shown(ctx.change.a)} vs {shown(ctx.change.b)}"
    carried, where = _read_into(ctx.a, ctx.b, ctx.change.a, ctx.change.b)
    rivals = _rivals(ctx, name, carried) if carried else {}

    def named_after(field: tuple[str, str]) -> str | None:
        """The variable carrying ``field`` that it is named after: this one, a rival, or none."""
        holders = (name, *(o for o, fields in rivals.items() if field in fields))
        return next((v for v in holders if _same_name(v, field[1])), None)

    mine = {w for w in carried if named_after(w) in (name, None)}
    if carried and not mine:
        field = min(carried)
        return Outcome(
            "none",
            f"{values}; {field[0]}.{field[1]} holds its value, but it is named after "
            f"{named_after(field)}, which has the same values: nothing shows the program read "
            "this one.",
        )
    if mine:
        held = ", ".join(sorted(f"{section}.{key}" for section, key in mine))
        said = f"{values}; the program read it: {held} holds its value {where}."
        shared = sorted(o for o, fields in rivals.items() if fields & mine)
        if shared and all(named_after(w) is None for w in mine):
            said += (
                f" So does {', '.join(shared)}: which of them the program read, a rerun tells "
                "(fingerprint bisect)."
            )
        return Outcome("recipe", said, prior=3)
    return Outcome(
        "none",
        f"{values}; nothing the runs logged holds its value, so nothing shows the program read "
        "it (a param logged from it would).",
    )


RULES: tuple[Rule, ...] = (
    Rule(
        PROGRAM_OPTIONS_EACH,
        "recipe",
        "A command-line option differs.",
        RECIPE,
        3,
        option,
        priority=1300,
    ),
    Rule(
        PROGRAM_OPTIONS,
        "recipe",
        "The command lines parse differently.",
        RECIPE,
        2,
        priority=1310,
    ),
    Rule(PROGRAM_ARGV, "recipe", "The command lines differ.", RECIPE, 1, argv, priority=1320),
    Rule(
        PROGRAM_ENTRY_PATH,
        "recipe",
        "A different entry point ran.",
        RECIPE,
        3,
        entry_path,
        priority=1330,
    ),
    Rule(PROGRAM_ENTRY_MODULE, "recipe", "A different module ran.", RECIPE, 3, priority=1340),
    Rule(
        PROGRAM_ENTRY_KIND,
        "recipe",
        "The program was started differently.",
        RECIPE,
        2,
        priority=1350,
    ),
    Rule(
        PROGRAM_ENTRY_SHA256,
        "recipe",
        "The entry point's content differs.",
        RECIPE,
        3,
        entry_content,
        priority=1360,
    ),
    Rule(
        PROGRAM_SOURCES_FILES_EACH,
        "recipe",
        "An imported source file differs.",
        RECIPE,
        2,
        source_file,
        priority=1370,
    ),
    Rule(
        PROGRAM_SOURCES_DIGEST,
        "none",
        "Summary of the imported sources, which are compared file by file.",
        NONE_CLASS,
        priority=1380,
    ),
    Rule(
        PROGRAM_SOURCES_COUNT,
        "none",
        "How many project files were imported; they are compared file by file.",
        NONE_CLASS,
        priority=1390,
    ),
    Rule(
        PROGRAM_SOURCES_TRUNCATED_AT,
        "none",
        "Where the list of imported sources was cut short.",
        NONE_CLASS,
        priority=1400,
    ),
    Rule(
        PROGRAM_CALL_EACH,
        "recipe",
        "A call argument differs.",
        RECIPE,
        3,
        call_argument,
        priority=1410,
    ),
    Rule(PARAMS_EACH, "recipe", "A logged param differs.", RECIPE, 3, param, priority=1420),
    Rule(
        PROGRAM_ENV_EACH,
        "recipe",
        "An environment variable differs.",
        RECIPE,
        2,
        variable,
        priority=1422,
    ),
    Rule(
        PROGRAM_ENV_VOLATILE,
        "none",
        "Which of the shell's, the terminal's or a job runner's variables were set; they say "
        "where and how the run was started, not how it trained.",
        NONE_CLASS,
        priority=1424,
    ),
    Rule(
        SEEDS_ORIGIN,
        "randomness",
        "Who seeded torch differs.",
        cite.SEED,
        3,
        origin,
        priority=1430,
    ),
    Rule(
        DATA_LOADERS_EACH_BATCHES_SEEN,
        "none",
        "How many batches a loader yielded; how far each run got is in the curves.",
        NONE_CLASS,
        priority=1440,
    ),
    Rule(
        GIT_UNTRACKED_FILES,
        "none",
        "Which files git does not track; the code a run imported from them is compared under "
        "program.sources.",
        NONE_CLASS,
        priority=1450,
    ),
    Rule(
        GIT_UNTRACKED_COUNT,
        "none",
        "A different number of untracked files; untracked code a run imported is compared "
        "under program.sources.",
        NONE_CLASS,
        priority=1460,
    ),
)
