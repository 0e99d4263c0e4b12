"""A bisect's report (``present/bisect.py``): the verdict with its cause, what was ruled out and
what cannot be set (``none`` where empty: what a bisect did not look at matters), and a row per
rerun, in each format."""

from __future__ import annotations

import json

from mlflow_fingerprint.present.bisect import render
from mlflow_fingerprint.prove.results import BisectResult, Cause, Rerun

PROVEN = BisectResult(
    "proven",
    "run_a",
    "run_b",
    until_step=4,
    causes=(Cause("seeds.requested", 0, 1, "randomness", sets=("seeds.requested",)),),
    ruled_out=("program.sources.files.helpers.py",),
    reruns=(
        Rerun("r1", {"seeds.requested": 1}, "b", 2, stopped_at=5, wall_s=3.25),
        Rerun("r2", {"program.sources.files.helpers.py": "y"}, "a", None, stopped_at=5),
    ),
)


def test_the_text_names_the_cause_the_ruled_out_and_each_rerun() -> None:
    text = render(PROVEN, "text")
    assert text.startswith("fingerprint bisect run_a run_b\n")
    assert "verdict: proven: seeds.requested (0 -> 1) turns A's curve into B's" in text
    assert "  - seeds.requested: 0 -> 1 (randomness), which set seeds.requested" in text
    assert "Ruled out:\n  - program.sources.files.helpers.py" in text
    assert "Cannot be set here:\n  - none" in text
    assert "  1 | seeds.requested=1 | B | 2 | r1 (stopped at 5, 3.2 s)" in text
    assert "  2 | program.sources.files.helpers.py=y | A | - | r2 (stopped at 5)" in text


def test_json_markdown_and_html_say_the_same() -> None:
    assert json.loads(render(PROVEN, "json")) == json.loads(json.dumps(PROVEN.to_dict()))
    markdown, html = render(PROVEN, "markdown"), render(PROVEN, "html")
    for shown in (markdown, html):
        assert "seeds.requested" in shown
        assert "program.sources.files.helpers.py" in shown
    assert html.rstrip().endswith("</body></html>")


def test_a_bisect_that_proves_nothing_says_why() -> None:
    none = BisectResult("not_settable", "a", "b", None, cannot_set=("torch.version",))
    text = render(none, "text")
    assert "verdict: no cause proven: what differs cannot be set by a rerun here" in text
    assert "Cannot be set here:\n  - torch.version" in text
    assert "Reruns" not in text
