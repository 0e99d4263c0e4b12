"""One metric's two curves as an inline SVG: A and B overlaid, the first divergence marked.

Plain SVG elements only (no script, no external style), so the HTML report is one file that
opens anywhere, including as an MLflow artifact preview.
"""

from __future__ import annotations

import math

from ..compare.report import Curve, MetricComparison
from .common import number
from .escape import html_text as escape

WIDTH, HEIGHT = 640, 236
LEFT, RIGHT, TOP, BOTTOM = 70, 16, 30, 30
COLOURS = {"a": "#1f77b4", "b": "#ff7f0e", "diverge": "#d62728"}


def _finite(curve: Curve) -> list[tuple[float, float]]:
    return [(s, v) for s, v in zip(curve.steps, curve.values, strict=True) if math.isfinite(v)]


def _span(low: float, high: float) -> tuple[float, float]:
    return (low - 0.5, high + 0.5) if low == high else (low, high)


def chart(metric: MetricComparison, label_a: str, label_b: str) -> str:
    points_a, points_b = _finite(metric.curve_a), _finite(metric.curve_b)
    every = points_a + points_b
    if not every:
        return f"<p>No finite values of {escape(metric.name)} to draw.</p>"
    first, last = min(p[0] for p in every), max(p[0] for p in every)
    low, high = min(p[1] for p in every), max(p[1] for p in every)
    x0, x1 = _span(first, last)
    y0, y1 = _span(low, high)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(step: float) -> float:
        return LEFT + (step - x0) / (x1 - x0) * plot_w

    def y(value: float) -> float:
        return TOP + (1 - (value - y0) / (y1 - y0)) * plot_h

    def polyline(points: list[tuple[float, float]], colour: str, dash: str) -> str:
        if len(points) == 1:  # a line needs two points; one value is a dot
            ((s, v),) = points
            return f'<circle cx="{x(s):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}"/>'
        coords = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in points)
        return (
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.5"{dash} points="{coords}"/>'
        )

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(metric.name)}">',
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#fafafa" '
        'stroke="#ccc"/>',
        f'<text x="{LEFT - 6}" y="{TOP + 10}" text-anchor="end" font-size="11">'
        f"{number(high)}</text>",
        f'<text x="{LEFT - 6}" y="{TOP + plot_h}" text-anchor="end" font-size="11">'
        f"{number(low)}</text>",
        f'<text x="{LEFT}" y="{HEIGHT - 10}" font-size="11">step {number(first)}</text>',
        f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 10}" text-anchor="end" font-size="11">'
        f"step {number(last)}</text>",
        polyline(points_a, COLOURS["a"], ""),
        polyline(points_b, COLOURS["b"], ' stroke-dasharray="5 3"'),
    ]
    step = metric.first_divergence_step
    if step is not None:
        xd = x(min(max(step, x0), x1))
        parts += [
            f'<line class="divergence" x1="{xd:.1f}" x2="{xd:.1f}" y1="{TOP}" '
            f'y2="{TOP + plot_h}" stroke="{COLOURS["diverge"]}" stroke-width="1.5"/>',
            f'<text x="{min(xd + 4, WIDTH - RIGHT - 120):.1f}" y="{TOP + 24}" font-size="11" '
            f'fill="{COLOURS["diverge"]}">first divergence: step {step}</text>',
        ]
    parts += [
        f'<text x="{LEFT}" y="{TOP - 10}" font-size="11" fill="{COLOURS["a"]}">'
        f"— A {escape(label_a)}</text>",
        f'<text x="{LEFT + plot_w / 2:.0f}" y="{TOP - 10}" font-size="11" '
        f'fill="{COLOURS["b"]}">- - B {escape(label_b)}</text>',
        "</svg>",
    ]
    return "\n".join(parts)
