"""The method: which fields account for the metric's spread, beyond the noise floor.

1. Replicate groups give the noise floor (``groups.py``).
2. The varying fields, merged into blocks where these runs cannot tell them apart (``design.py``),
   are the terms of a linear model on one-hot columns; each term gets its Type II sum of squares
   (``anova.py``), reported as omega-squared, its share of the metric's variance corrected for
   the share pure noise would give it (``(SS - df * MS_error) / (SS_total + MS_error)``), and
   as partial omega-squared beside it.
3. Each term's F test against the residual mean square, Holm-corrected across the terms, says
   whether it is beyond the noise; the bootstrap over runs gives its interval.
4. Two-way interactions of the blocks that explain the most are tested the same way and kept
   when they pass: a few dozen runs afford a handful of them, not every pair of every field.

A term is ``important`` when its corrected F test passes and its interval's lower end is above
zero; ``ruled_out`` when it is not and its interval's upper end is at most
:data:`RULED_OUT_SHARE`; ``undecided`` otherwise: too few runs, or too much noise, to say.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from threadpoolctl import threadpool_limits

from .anova import Anova, Cells, Term, anova, cells, design_rank
from .design import Block, blocks, encode, first_seen, short_names
from .ftest import f_survival, holm
from .groups import Groups, NoiseFloor, Outlying, noise_floor, outliers
from .result import Factor, Level, Noise, Separation
from .table import FieldInfo, Table

ALPHA = 0.05
RULED_OUT_SHARE = 0.05  # at most this share of the variance, and not beyond the noise
BOOTSTRAP = 200  # resamples of the runs for each interval
INTERVAL = (2.5, 97.5)  # percentiles: a 95% interval
MAX_INTERACTING = 4  # interactions are tested among at most this many important blocks
MIN_ERROR_DF = 2  # degrees of freedom the residual keeps; blocks beyond that are not estimated
SEED = 0  # the bootstrap's generator: the same runs give the same report


@dataclass(frozen=True)
class Analysis:
    noise: Noise
    factors: tuple[Factor, ...]
    ruled_out: tuple[str, ...]
    groups: Groups
    floor: NoiseFloor
    outlying: tuple[Outlying, ...]
    separate_by: tuple[Separation, ...]
    notes: tuple[str, ...]


def analyse(table: Table, y: np.ndarray) -> Analysis:
    """The analysis of ``y`` over ``table``'s fields, its linear algebra on one BLAS thread: the
    model is at most the cells by their columns (hundreds by tens), which one thread solves in
    a millisecond, while a pool of them on a busy machine (two cores, a training beside) waits
    on each other for a tenth of a second a call (a rank of 200 x 64: 1-5 ms on one thread,
    90-180 ms on two). One thread also makes the sums the same on every machine."""
    with threadpool_limits(limits=1, user_api="blas"):
        return _analyse(table, y)


def _analyse(table: Table, y: np.ndarray) -> Analysis:
    groups = Groups.of(table.keys)
    floor = noise_floor(groups, y)
    info = {f.path: f for f in table.fields}
    found = blocks([table.columns[f.path] for f in table.fields])
    found, dropped = _within_df(found, y)
    notes: list[str] = []
    if dropped:
        names = ", ".join(_label(b) for b in dropped)
        notes.append(
            f"too few runs to estimate every field beside the others; not estimated: {names}"
        )
    terms: list[Term] = [(i,) for i in range(len(found))]
    pairs, alias_notes = _interactions(found, terms, y)
    terms += pairs
    notes += alias_notes
    design = cells(found, terms, len(y))
    fitted = anova(design, design.sample(y))
    p_adjusted = _p_values(fitted, terms)
    low, high = _intervals(design, y, terms)
    floats = y.tolist()
    factors = [
        _factor(found, term, fitted, p_adjusted[k], (low[k], high[k]), (y, floats), info)
        for k, term in enumerate(terms)
    ]
    if not found and not dropped:  # fields that were not estimated did vary
        notes.append("no recorded field varies across these runs but their seeds")
    order = {"important": 0, "undecided": 1, "ruled_out": 2}
    factors.sort(key=lambda f: (order[f.verdict], -f.share, f.label))
    ruled = tuple(
        name for f in factors if f.verdict == "ruled_out" and f.kind == "main" for name in f.fields
    )
    noise = _noise(floor, fitted, table.seeds, notes)
    separate = tuple(_separation(b, table) for b in found if b.confounded)
    return Analysis(
        noise,
        tuple(factors),
        ruled,
        groups,
        floor,
        tuple(outliers(groups, y, floor)),
        separate,
        tuple(notes),
    )


def joined(fields: Sequence[str], sign: str) -> str:
    """'program.call.dropout + weight_decay': fields after the first without the parent path
    they share with it."""
    first = fields[0]
    parent = first.rpartition(".")[0]
    rest = [
        f[len(parent) + 1 :] if parent and f.startswith(parent + ".") else f for f in fields[1:]
    ]
    return f" {sign} ".join([first, *rest])


def _label(block: Block) -> str:
    """The block's lead settings (the fields recorded with them are in ``fields``)."""
    return joined(block.settings[:2], "+")


def _design_rank(found: Sequence[Block], y: np.ndarray) -> int:
    return design_rank(cells(found, [(i,) for i in range(len(found))], len(y)))


def _within_df(found: list[Block], y: np.ndarray) -> tuple[list[Block], list[Block]]:
    """The blocks the runs can estimate together while the residual keeps MIN_ERROR_DF degrees
    of freedom: those that explain the most alone are kept first."""
    if not found or len(y) - _design_rank(found, y) >= MIN_ERROR_DF:
        return found, []
    alone = []
    for i, block in enumerate(found):
        design = cells([block], [(0,)], len(y))
        result = anova(design, design.sample(y))
        alone.append((-result.terms[(0,)].ss, i))
    kept: list[int] = []
    for _, i in sorted(alone):
        trial = sorted([*kept, i])
        if len(y) - _design_rank([found[k] for k in trial], y) >= MIN_ERROR_DF:
            kept = trial
    return [found[k] for k in kept], [b for k, b in enumerate(found) if k not in kept]


def _p_values(fitted: Anova, terms: Sequence[Term]) -> list[float | None]:
    raw = []
    for term in terms:
        f = fitted.f_ratio(term)
        df = fitted.terms[term].df
        raw.append(None if f is None or df == 0 else f_survival(f, df, fitted.df_error))
    tested = [p for p in raw if p is not None]
    adjusted = iter(holm(tested))
    return [None if p is None else next(adjusted) for p in raw]


def _interactions(
    found: Sequence[Block], mains: Sequence[Term], y: np.ndarray
) -> tuple[list[Term], list[str]]:
    """Two-way interactions among the blocks that explain the most (at most MAX_INTERACTING of
    them, by their Type II sum of squares), kept where they pass their own Holm-corrected F test
    in the model of every main effect and the candidate pairs. The candidates are not required
    to pass a test first: an interaction left out of the model inflates its residual, which can
    hide the very main effects that would have named it.

    Pairs join the model in order of their blocks' sums of squares, and a pair the model already
    spans is left out: in a fractional design (a thread count set as the parity of three
    options) two interactions can be one and the same column; the one between the blocks that
    matter on their own is named, with a note saying which it cannot be told from."""
    if len(mains) < 2:
        return [], []  # nothing to pair
    design = cells(found, mains, len(y))
    fitted = anova(design, design.sample(y))
    ss = {t: fitted.terms[t].ss for t in mains}
    strong = sorted((t for t in mains if ss[t] > 0), key=lambda t: -ss[t])[:MAX_INTERACTING]
    pairs = sorted(  # each pair the block that explains more first, as it is named
        ((a[0], b[0]) for a, b in combinations(strong, 2)),
        key=lambda pair: -ss[(pair[0],)] * ss[(pair[1],)],
    )

    def spanned(terms: Sequence[Term]) -> int:
        return design_rank(cells(found, [*mains, *terms], len(y)))

    included: list[Term] = []
    skipped: list[Term] = []
    rank = spanned([])
    for pair in pairs:
        grown = spanned([*included, pair])
        if grown > rank:
            included.append(pair)
            rank = grown
        else:
            skipped.append(pair)
    if not included:
        return [], []
    design = cells(found, [*mains, *included], len(y))
    fitted = anova(design, design.sample(y))
    if fitted.df_error < MIN_ERROR_DF:
        return [], []
    p = _p_values(fitted, included)
    kept = [t for t, pt in zip(included, p, strict=True) if pt is not None and pt < ALPHA]
    notes = []
    for term in kept:
        others = [t for t in included if t != term]
        twins = [s for s in skipped if spanned([*others, s]) == rank]
        if twins:
            named = ", ".join(_pair_label(found, t) for t in twins)
            notes.append(
                f"{_pair_label(found, term)} cannot be told from {named} in these runs (the "
                "same runs differ in both); it is named for the fields that matter on their own"
            )
    return kept, notes


def _pair_label(found: Sequence[Block], term: Term) -> str:
    """'program.call.lr × width'; a block of several settings in brackets."""
    a, b = (found[i] for i in term)
    if len(a.settings) == len(b.settings) == 1:
        return joined([a.settings[0], b.settings[0]], "×")
    return " × ".join(f"({_label(x)})" if len(x.settings) > 1 else _label(x) for x in (a, b))


def _intervals(
    design: Cells, y: np.ndarray, terms: Sequence[Term]
) -> tuple[list[float], list[float]]:
    """Percentile bootstrap of each term's omega-squared, resampling runs."""
    rng = np.random.default_rng(SEED)
    n = len(y)
    draws = np.empty((BOOTSTRAP, len(terms)))
    for b in range(BOOTSTRAP):
        fitted = anova(design, design.sample(y, rng.integers(0, n, n)))
        draws[b] = [fitted.omega_squared(t) for t in terms]
    low, high = np.percentile(draws, INTERVAL, axis=0)
    return [float(x) for x in low], [float(x) for x in high]


def _verdict(p: float | None, low: float, high: float) -> str:
    if p is not None and p < ALPHA and low > 0:
        return "important"
    if high <= RULED_OUT_SHARE:
        return "ruled_out"
    return "undecided"


def _clip(value: float) -> float:
    return min(max(value, 0.0), 1.0)


def _levels(
    codes: np.ndarray, labels: Sequence[str], y: np.ndarray, floats: Sequence[float]
) -> tuple[Level, ...]:
    """The metric per value. Each level lists its runs' values out of ``floats`` (``y`` as
    Python floats, made once): every factor lists every run, and a float of its own in each
    was 32 bytes a run a factor where a shared one is 8 (4 factors of 100,000 runs: 12 MiB)."""
    out = []
    for code, label in enumerate(labels):
        where = np.flatnonzero(codes == code)
        if len(where) == 0:
            continue
        values = y[where]
        sd = float(np.std(values, ddof=1)) if len(values) > 1 else None
        listed = tuple(map(floats.__getitem__, where.tolist()))
        out.append(Level(label, len(values), float(values.mean()), sd, listed))
    return tuple(sorted(out, key=lambda lv: lv.mean))


def _factor(
    found: Sequence[Block],
    term: Term,
    fitted: Anova,
    p: float | None,
    interval: tuple[float, float],
    values: tuple[np.ndarray, Sequence[float]],
    info: dict[str, FieldInfo],
) -> Factor:
    """The term's factor: ``values`` are the metric per run, as an array and as floats."""
    parts = [found[i] for i in term]
    if len(parts) == 1:
        block = parts[0]
        codes, labels, label = block.codes, block.labels, _label(block)
        fields, confounded, kind, near = block.fields, block.confounded, "main", block.near
    else:
        a, b = parts
        # each pair of values named once, from its first run, not once a run
        every, firsts = first_seen(np.column_stack([a.codes, b.codes]))
        pairs = [f"{a.labels[a.codes[i]]} × {b.labels[b.codes[i]]}" for i in firsts]
        combined, labels = encode(pairs)
        codes = combined[every]
        label = _pair_label(found, term)
        fields, confounded, kind, near = (*a.fields, *b.fields), False, "interaction", False
    lead = info[fields[0]]
    verdict = _verdict(p, interval[0], interval[1])
    return Factor(
        fields=tuple(fields),
        label=label,
        share=_clip(fitted.omega_squared(term)),
        interval=(_clip(interval[0]), _clip(interval[1])),
        by_value=_levels(codes, labels, *values),
        confounded=confounded,
        verdict=verdict,  # type: ignore[arg-type]
        kind=kind,  # type: ignore[arg-type]
        effect=lead.effect,
        partial=_clip(fitted.partial_omega_squared(term)),
        df=fitted.terms[term].df,
        p=p,
        near=near,
    )


def _noise(floor: NoiseFloor, fitted: Anova, seeds: Sequence[str], notes: list[str]) -> Noise:
    if floor.sd is not None:
        return Noise(floor.sd, floor.share, floor.groups, floor.runs, floor.df, tuple(seeds))
    ms = fitted.ms_error
    if ms is None:
        notes.append("no replicates and no residual: the noise floor cannot be estimated")
        return Noise(None, None, 0, 0, 0, tuple(seeds))
    notes.append(
        "no two runs are replicates (equal but for their seeds): the noise floor is the model's "
        "residual, which also holds whatever the fields do together that the model leaves out"
    )
    denominator = fitted.ss_total + ms
    share = fitted.n * ms / denominator if denominator > 0 else None
    return Noise(float(np.sqrt(ms)), share, 0, 0, fitted.df_error, tuple(seeds))


def _separation(block: Block, table: Table) -> Separation:
    """Which runs would tell the block's two lead settings apart: value pairs never seen."""
    first, second = block.settings[0], block.settings[1]
    a, b = table.columns[first], table.columns[second]
    _, firsts = first_seen(np.column_stack([a.codes, b.codes]))
    seen = {(a.labels[a.codes[i]], b.labels[b.codes[i]]) for i in firsts}
    names = short_names([first, second])
    wanted = [
        f"{names[0]}={va} with {names[1]}={vb}"
        for va in a.labels  # each in order of its first run, as the runs list them
        for vb in b.labels
        if (va, vb) not in seen
    ][:3]
    others = block.settings[2:]
    text = (
        "runs with " + ", or ".join(wanted)
        if wanted
        else f"more runs in which {names[0]} and {names[1]} change one at a time"
    )
    text += " (everything else as in these runs, a few seeds each)"
    if others:
        text += "; likewise for " + ", ".join(others[:3]) + (" ..." if len(others) > 3 else "")
    return Separation((first, second, *others), text)
