"""An explain report as GitHub-flavoured Markdown (a pull-request comment, a CI job summary)."""

from __future__ import annotations

from ...explain.result import Explanation
from ..escape import markdown_code as code
from ..escape import markdown_text as cell
from ..markdown import table
from . import words


def render(report: Explanation) -> str:
    one = words.agreed(report)
    if one is not None:
        return cell(one) + "\n"
    out = [f"### {cell(words.title(report))}", "", cell(words.headline(report)), ""]
    out += [cell(words.noise_line(report)), ""]
    shown = [f for f in report.factors if f.verdict != "ruled_out"]
    if shown:
        out += table(
            ("factor", "share", "95% interval", "verdict", "mean per value"),
            [
                (
                    (
                        code(f.label)
                        if f.kind == "interaction"
                        else " + ".join(code(x) for x in f.fields[:3])
                        + (f" (+{len(f.fields) - 3})" if len(f.fields) > 3 else "")
                    )
                    + (" ⚠ confounded" if f.confounded else ""),
                    words.pct(f.share),
                    words.interval(f),
                    f"**{f.verdict}**" if f.verdict == "important" else f.verdict,
                    cell(words.levels_text(f.by_value, limit=4)),
                )
                for f in shown
            ],
        )
    if report.ruled_out:
        out += ["", "**Ruled out** (within the noise): " + ", ".join(map(code, report.ruled_out))]
    for f in (f for f in report.factors if f.confounded):
        out += ["", f"> ⚠ {cell(words.confounded_line(report, f))}."]
        sep = words.separation(report, f)
        if sep is not None:
            out.append(f"> To separate them: {cell(sep.runs_needed)}.")
    if report.outliers:
        out += ["", "**Outliers** (far from their replicates):", ""]
        out += [
            f"- {code(o.run_id)} ({cell(o.group)}, z {o.z:+.1f}, {words.num(o.value)}): "
            f"{code(o.diff)}"
            for o in report.outliers
        ]
    tail = [line for line in (words.missing_line(report), words.left_out_line(report)) if line]
    if tail:
        out += ["", *(f"- {cell(t)}" for t in tail)]
    if report.notes:
        out += ["", *(f"> {cell(n)}" for n in report.notes)]
    return "\n".join(out) + "\n"
