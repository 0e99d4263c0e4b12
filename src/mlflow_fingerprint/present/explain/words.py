"""Sentences and numbers every format of an explain report shares, so text, markdown and HTML
say the same thing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ...explain.result import Explanation, Factor, Level, Separation
from ..common import plural
from ..escape import one_line

UNEXPLAINED_FROM = 0.25  # a rest this large is said out loud


def num(value: float | None) -> str:
    """A metric value in a report a person reads: four significant digits."""
    if value is None:
        return "—"
    return f"{value:.4g}"


def pct(share: float | None) -> str:
    if share is None:
        return "—"
    value = share * 100
    return f"{value:.0f}%" if value >= 10 or value == 0 else f"{value:.1f}%"


def interval(f: Factor) -> str:
    return f"{pct(f.interval[0])}–{pct(f.interval[1])}"


def at_text(report: Explanation) -> str:
    return "final value" if report.at == "final" else f"at step {report.at}"


def title(report: Explanation) -> str:
    return (
        f"fingerprint explain {report.experiment}: {report.metric} ({at_text(report)}) over "
        f"{plural(report.runs, 'run')}, mean {num(report.mean)}, sd {num(report.sd)}"
    )


def noise_line(report: Explanation) -> str:
    n = report.noise
    if n.sd is None:
        return "Noise floor: unknown (no replicates and no residual to estimate it from)."
    if n.groups == 0:
        return (
            f"Noise floor: sd {num(n.sd)}, {pct(n.share)} of the variance, from the model's "
            "residual (no two runs are replicates)."
        )
    seeds = f" ({', '.join(n.fields)})" if n.fields else ""
    return (
        f"Noise floor: sd {num(n.sd)} between replicates{seeds}: {pct(n.share)} of the "
        f"variance; from {plural(n.groups, 'group')} of runs equal but for their seeds, "
        f"{n.runs} runs."
    )


@dataclass(frozen=True)
class Segment:
    label: str
    share: float  # as estimated
    kind: str  # "factor", "undecided", "noise", "rest"
    width: float = 0.0  # of the bar: the shares scaled to add up to 1 where they overlap


def segments(report: Explanation) -> list[Segment]:
    """The split of the variance: important factors, undecided ones, noise and what is left."""
    out = [Segment(f.label, f.share, "factor") for f in report.important if f.share > 0]
    undecided = sum(f.share for f in report.undecided)
    if undecided > 0:
        out.append(Segment("undecided fields", undecided, "undecided"))
    if report.noise.share:
        out.append(Segment("noise (seeds)", report.noise.share, "noise"))
    taken = sum(s.share for s in out)
    if taken < 1:
        out.append(Segment("unexplained", 1 - taken, "rest"))
    scale = max(taken, 1.0)  # estimates that overlap a little are drawn to their sum's scale
    return [Segment(s.label, s.share, s.kind, s.share / scale) for s in out]


def unexplained(report: Explanation) -> float:
    return next((s.share for s in segments(report) if s.kind == "rest"), 0.0)


def agreed(report: Explanation) -> str | None:
    """The one line for runs that all have the same value (nothing to explain); else None."""
    if report.sd != 0 or report.factors:
        return None
    return (
        f"{report.experiment}: all {plural(report.runs, 'run')} agree on {report.metric} "
        f"({at_text(report)} {num(report.mean)}): no spread to explain."
    )


def headline(report: Explanation) -> str:
    """One sentence a person reads first."""
    top = report.important
    rest = unexplained(report)
    if top:
        named = ", ".join(f"{f.label} ({pct(f.share)})" for f in top[:3])
        line = f"Beyond the noise, the spread is {named}"
        line += f" and {len(top) - 3} more" if len(top) > 3 else ""
        line += "."
    elif report.noise.share is not None and report.noise.share >= 1 - UNEXPLAINED_FROM:
        line = "Nothing recorded moves the metric beyond the noise: the spread is seed noise."
    elif report.undecided:
        # a field these runs cannot rule in or out (4 runs, 2 learning rates, replicates bitwise
        # equal: lr holds all the spread, its interval 0-100%): "no field moves it" would be
        # read as "lr does not matter", which the curves contradict
        named = ", ".join(f"{f.label} ({pct(f.share)})" for f in report.undecided[:3])
        line = (
            "Too few runs, or too much noise, to say which recorded field moves the metric; "
            f"undecided: {named}."
        )
    else:
        line = "No recorded field moves the metric beyond the noise floor with these runs."
    if rest >= UNEXPLAINED_FROM:
        line += (
            f" Unexplained: {pct(rest)} of the variance is neither a recorded field nor the "
            "seed noise."
        )
    return line


def levels_text(levels: Sequence[Level], limit: int = 3, width: int = 44, room: int = 80) -> str:
    """'0.01: 0.31 (n=12) · 0.1: 0.81 (n=12)', lowest mean first: at most ``limit`` values, and
    no more than fit in about ``room`` characters (the first always shows)."""
    shown: list[str] = []
    for lv in levels[:limit]:
        item = f"{short(lv.value, width)}: {num(lv.mean)} (n={lv.n})"
        if shown and sum(len(x) + 3 for x in shown) + len(item) > room:
            break
        shown.append(item)
    more = f" · +{len(levels) - len(shown)}" if len(levels) > len(shown) else ""
    return " · ".join(shown) + more


def short(text: str, width: int) -> str:
    """``text`` on one line, control characters written out (it may come from any record), cut
    to ``width``."""
    text = one_line(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def separation(report: Explanation, f: Factor) -> Separation | None:
    """The runs that would split a confounded factor (``separate_by`` holds one per block)."""
    return next((s for s in report.separate_by if set(s.fields) <= set(f.fields)), None)


def confounded_line(report: Explanation, f: Factor) -> str:
    """'a and b always changed together: 7% of the variance between them, not separable...'."""
    sep = separation(report, f)
    leads = list(sep.fields[:2] if sep else f.fields[:2])
    more = len(f.fields) - len(leads)
    named = " and ".join(leads) + (f" (+{more} that moved with them)" if more > 0 else "")
    how = "always changed together" if not f.near else "changed together in nearly every run"
    return (
        f"{named} {how}: {pct(f.share)} of the variance between them, not separable with these runs"
    )


def left_out_line(report: Explanation) -> str | None:
    if not report.left_out:
        return None
    reasons = Counter(x.why for x in report.left_out)
    return (
        f"Left out: {plural(len(report.left_out), 'run')} ("
        + ", ".join(f"{n} {why}" for why, n in reasons.most_common(4))
        + ")."
    )


def missing_line(report: Explanation) -> str | None:
    m = report.missing
    if not m.runs:
        return None
    kinds = Counter(m.coverage.values())
    what = ", ".join(
        f"{n} with {'params only' if k == 'params' else 'tags only'}" for k, n in kinds.items()
    )
    fields = (
        f"; {plural(len(m.fields), 'field')} they lack left out "
        f"({', '.join(m.fields[:3])}{', …' if len(m.fields) > 3 else ''})"
        if m.fields
        else ""
    )
    return f"Missing fingerprints: {plural(len(m.runs), 'run')} ({what}){fields}."
