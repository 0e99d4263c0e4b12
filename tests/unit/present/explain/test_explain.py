"""One entry for every format of the explain report (``present/explain/__init__.py``)."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest

from mlflow_fingerprint.explain.result import Explanation, Group
from mlflow_fingerprint.present.explain import pieces, render
from mlflow_fingerprint.tracking.roster import Roster, RunIds
from support.explanation import sample


def test_each_format_is_its_own_and_json_is_the_result_itself() -> None:
    report = sample()
    assert json.loads(render(report, "json")) == json.loads(json.dumps(report.to_dict()))
    assert render(report, "markdown").startswith("### ")
    assert render(report, "html").lstrip().lower().startswith("<!doctype html>")
    assert render(report, "text").startswith("fingerprint explain sweep")
    assert "\x1b[" in render(report, "text", rich=True)


@pytest.mark.parametrize("fmt", ["json", "markdown", "html", "text"])
def test_the_pieces_are_the_report_and_json_s_own_text(fmt) -> None:
    """What the command writes piece by piece is the rendered report: for JSON, the text
    ``json.dumps(..., indent=2)`` writes, in more than one piece."""
    report = sample()
    written = list(pieces(report, fmt))  # type: ignore[arg-type]
    assert "".join(written) == render(report, fmt)  # type: ignore[arg-type]
    if fmt == "json":
        assert len(written) > 2
        assert "".join(written) == json.dumps(report.to_dict(), indent=2) + "\n"


def groups() -> tuple[Group, ...]:
    """Two groups: one listing its runs from a roster, one with characters json escapes."""
    roster = Roster()
    for i in range(5):
        roster.append(f"{i:032x}", None)
    return (
        Group("g1", RunIds.of(roster, [0, 3]), 1.0, float("nan")),
        Group("g2", ('run-\u00e9\n"q"',), 2.0, None),
    )


def never(_: object) -> None:
    raise AssertionError("the whole report's dict was made")


@pytest.mark.parametrize("variant", ["sample", "empty lists", "groups"])
def test_json_is_written_a_part_at_a_time_as_json_writes_the_whole(
    variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Empty lists, run ids from a roster, escaped characters and numbers json cannot hold
    come out as ``json.dumps`` writes the whole dict, which ``pieces`` never makes."""
    report = {
        "sample": sample(),
        "empty lists": replace(sample(), factors=(), outliers=(), left_out=(), notes=("ü\u2028",)),
        "groups": replace(sample(), groups=groups()),
    }[variant]
    expected = json.dumps(report.to_dict(), indent=2) + "\n"
    monkeypatch.setattr(Explanation, "to_dict", never)
    assert "".join(pieces(report, "json")) == expected


def test_a_group_is_made_into_json_when_the_text_reaches_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[str] = []
    to_dict = Group.to_dict

    def counted(group: Group) -> dict[str, object]:
        made.append(group.id)
        return to_dict(group)

    monkeypatch.setattr(Group, "to_dict", counted)
    written = pieces(replace(sample(), groups=groups()), "json")
    head = "".join(itertools.islice(written, 20))
    assert '"groups"' not in head
    assert made == []
    assert '"groups"' in "".join(written)
    assert made == ["g1", "g2"]


def test_an_unknown_format_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown format 'pdf'"):
        render(sample(), "pdf")  # type: ignore[arg-type]
