"""The explain report's two charts as inline SVG: the split of the variance as one stacked bar,
and the metric per value of a field as a strip plot (every run a dot, each value's mean a tick).

Plain SVG elements only (no script, no external style), as the diff report's curves, so the HTML
file opens anywhere, an MLflow artifact preview included. Every text from a record is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...explain.result import Factor
from ..escape import html_text as escape
from .words import Segment, num, pct, short

WIDTH = 720
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
KIND_COLOURS = {"undecided": "#c7c7c7", "noise": "#8c8c8c", "rest": "#f1f1f1"}


def colour(kind: str, index: int) -> str:
    return KIND_COLOURS.get(kind) or PALETTE[index % len(PALETTE)]


def stacked(parts: Sequence[Segment]) -> str:
    """One horizontal bar, 100% wide, a segment per share; a legend under it."""
    left, bar_w, top, bar_h, row_h = 10, WIDTH - 20, 10, 34, 18
    height = top + bar_h + 16 + row_h * len(parts)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="split of the variance">'
    ]
    x = float(left)
    factor_index = 0
    for part in parts:
        fill = colour(part.kind, factor_index)
        factor_index += part.kind == "factor"
        w = part.width * bar_w
        out.append(
            f'<rect class="segment" x="{x:.1f}" y="{top}" width="{w:.1f}" height="{bar_h}" '
            f'fill="{fill}" stroke="#fff"><title>{escape(part.label)}: {pct(part.share)}</title>'
            "</rect>"
        )
        if w > 40:
            out.append(
                f'<text x="{x + w / 2:.1f}" y="{top + bar_h / 2 + 4}" text-anchor="middle" '
                f'font-size="12" fill="{"#fff" if part.kind in ("factor", "noise") else "#333"}">'
                f"{pct(part.share)}</text>"
            )
        x += w
    factor_index = 0
    for i, part in enumerate(parts):
        fill = colour(part.kind, factor_index)
        factor_index += part.kind == "factor"
        y = top + bar_h + 14 + i * row_h
        out += [
            f'<rect x="{left}" y="{y - 10}" width="12" height="12" fill="{fill}" stroke="#999"/>',
            f'<text x="{left + 18}" y="{y}" font-size="12">{escape(short(part.label, 90))}: '
            f"{pct(part.share)}</text>",
        ]
    out.append("</svg>")
    return "\n".join(out)


def strip(factor: Factor, low: float, high: float, index: int) -> str:
    """The metric of each run by the factor's value: a row per value, lowest mean first."""
    levels = factor.by_value
    longest = max((len(short(level.value, 40)) for level in levels), default=0)
    label_w = min(300, max(80, 7 * longest + 16))  # about 7 px a character at 12 px
    right, top, row_h, bottom = 60, 8, 26, 26
    plot_w = WIDTH - label_w - right
    height = top + row_h * len(levels) + bottom
    span = (high - low) or 1.0

    def x(value: float) -> float:
        return label_w + (value - low) / span * plot_w

    fill = PALETTE[index % len(PALETTE)]
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(factor.label)}">',
        f'<rect x="{label_w}" y="{top}" width="{plot_w}" height="{row_h * len(levels)}" '
        'fill="#fafafa" stroke="#ddd"/>',
    ]
    for row, level in enumerate(levels):
        mid = top + row * row_h + row_h / 2
        out.append(
            f'<text x="{label_w - 8}" y="{mid + 4:.1f}" text-anchor="end" font-size="12">'
            f"{escape(short(level.value, 40))}</text>"
        )
        for k, value in enumerate(level.values):
            jitter = ((k * 7919) % 11 - 5) * 1.6  # a fixed spread, so the file is reproducible
            out.append(
                f'<circle class="run" cx="{x(value):.1f}" cy="{mid + jitter:.1f}" r="3" '
                f'fill="{fill}" fill-opacity="0.6"/>'
            )
        out += [
            f'<line x1="{x(level.mean):.1f}" x2="{x(level.mean):.1f}" y1="{mid - 10:.1f}" '
            f'y2="{mid + 10:.1f}" stroke="#222" stroke-width="2"/>',
            f'<text x="{WIDTH - right + 6}" y="{mid + 4:.1f}" font-size="11" fill="#555">'
            f"n={level.n}</text>",
        ]
    base = top + row_h * len(levels) + 16
    out += [
        f'<text x="{label_w}" y="{base}" font-size="11">{num(low)}</text>',
        f'<text x="{label_w + plot_w}" y="{base}" text-anchor="end" font-size="11">'
        f"{num(high)}</text>",
        "</svg>",
    ]
    return "\n".join(out)
