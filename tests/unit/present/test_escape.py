"""Every renderer escapes what a record holds for its format: no tag in Markdown or HTML, no
control sequence reaching a terminal, no rich markup, no extra table column.

The hostile values sit where records put free text: a command-line option, a param the user
logged, a field the comparator explains. Records are data, however they were written.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from mlflow_fingerprint import diff
from mlflow_fingerprint.cli.main import main
from mlflow_fingerprint.present import render
from mlflow_fingerprint.present.description import description
from mlflow_fingerprint.present.escape import markdown_text, terminal
from support.records import cpu_record, edit, write

SCRIPT = "<script>alert(1)</script>"
OSC = "\x1b]52;c;cm0gLXJmIH4=\x07"  # rewrite the clipboard
CLEAR = "\x1b[2J"
HOSTILE = f"{SCRIPT} | `tick` *bold* [link](http://x) {OSC}{CLEAR} \u202eevil [bold]x[/]"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("escape")
    a = edit(cpu_record(), **{"program.options.note": HOSTILE, "params.lr": HOSTILE})
    b = edit(cpu_record(), **{"program.options.note": "plain", "params.lr": "0.1"})
    return diff(write(tmp, "a", a), write(tmp, "b", b))


def controls(text: str) -> list[str]:
    return re.findall("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text)


def test_markdown_puts_no_tag_no_link_and_no_extra_column_in_its_tables(report) -> None:  # type: ignore[no-untyped-def]
    out = render(report, "markdown", include_none=True)
    assert "<script>" not in out.replace(f"`{SCRIPT}", "")  # only inside a code span
    assert controls(out) == []
    for table in re.findall(r"(?:^\|.*\|$\n?)+", out, flags=re.M):
        rows = table.strip().splitlines()
        widths = {len(re.split(r"(?<!\\)\|", row)) for row in rows}
        assert len(widths) == 1, rows  # every row has the header's columns
    assert "\\[link\\]" in markdown_text("[link](http://x)")
    assert markdown_text(SCRIPT) == "&lt;script&gt;alert(1)&lt;/script&gt;"


def test_html_escapes_every_value(report) -> None:  # type: ignore[no-untyped-def]
    out = render(report, "html", include_none=True)
    assert "<script>" not in out
    assert "&lt;script&gt;" in out
    assert controls(out) == []


@pytest.mark.parametrize("rich", [False, True])
def test_the_terminal_report_carries_no_control_sequence_of_a_record(report, rich: bool) -> None:  # type: ignore[no-untyped-def]
    out = render(report, "text", include_none=True, rich=rich)
    assert OSC not in out
    assert CLEAR not in out
    assert "\u202e" not in out
    assert "\\u001b]52;c;" in out  # shown, written out
    if not rich:
        assert controls(out) == []
    assert "[bold]x[/]" in out  # rich markup in a value is printed, not applied


def test_json_keeps_the_value_exactly(report) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(render(report, "json", include_none=True))
    values = {d["field"]: d["a"] for d in data["differences"]}
    assert values["program.options.note"] == HOSTILE


def test_show_and_an_error_line_write_control_characters_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "a", edit(cpu_record(), **{"program.options.note": HOSTILE}))
    assert main(["show", path, "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert controls(out) == []
    assert json.loads(out)["program"]["options"]["note"] == HOSTILE  # still valid, same value
    bad = tmp_path / f"bad{CLEAR}.json"
    bad.write_text("{")
    assert main(["show", str(bad)]) == 2
    err = capsys.readouterr().err
    assert controls(err) == []
    assert err.count("\n") == 1
    assert terminal("a\x1bb\nc") == "a\\u001bb\nc"


# Names and values that a Markdown renderer (MLflow's UI, GitHub) would turn into live markup.
LIVE_MARKUP = [
    "[click me](http://evil.example/)",
    "<img src=x onerror=alert(1)>",
    "![px](http://evil.example/p.png)",
    "[x](javascript:alert(1))",
    "<a href='javascript:alert(1)'>x</a>",
    "javascript:alert(document.cookie)",
    "see www.evil.example or http://evil.example/?q=1",
    "mail me@evil.example",
    "<https://evil.example/auto>",
    "[ref]: http://evil.example/ref",
]


def inert(markdown: str) -> None:
    """``markdown`` rendered (raw HTML allowed, as a lax renderer does) holds no link, image or
    tag, and every URL-shaped word in it is inside a code span, which no renderer links."""
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    assert "<a " not in rendered, rendered
    assert "<img" not in rendered, rendered
    tags = set(re.findall(r"</?([a-zA-Z][\w-]*)", rendered))
    assert tags <= {
        "p",
        "code",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "h3",
        "strong",
        "ul",
        "li",
        "em",
        "blockquote",
    }, tags
    outside_code = re.sub(r"<code>.*?</code>", "", rendered, flags=re.S)
    assert not re.search(r"(?i)https?:|www\.|javascript:|@evil", outside_code), outside_code


@pytest.mark.parametrize("hostile", LIVE_MARKUP)
def test_the_run_description_shows_names_and_values_as_text(tmp_path: Path, hostile: str) -> None:
    """The run's MLflow description (``mlflow.note.content``, rendered by the UI as Markdown)
    from a run named ``hostile`` whose option holds it too (issue 45: they landed live)."""
    a = edit(cpu_record(), **{"program.options.note": hostile})
    b = edit(cpu_record(), **{"program.options.note": "plain"})
    report = diff(write(tmp_path, "a", a), write(tmp_path, "b", b))
    named = dataclasses.replace(report.a, name=hostile, run_id="0123456789abcdef" * 2)
    line = description(dataclasses.replace(report, a=named))
    assert "program.options.note" in line
    assert "\n" not in line
    inert(line)


@pytest.mark.parametrize("hostile", LIVE_MARKUP)
def test_the_markdown_report_shows_record_values_as_text(tmp_path: Path, hostile: str) -> None:
    a = edit(cpu_record(), **{"program.options.note": hostile, "params.lr": hostile})
    b = edit(cpu_record(), **{"program.options.note": "plain", "params.lr": "0.1"})
    report = diff(write(tmp_path, "a", a), write(tmp_path, "b", b))
    named = dataclasses.replace(report.a, ref=hostile, name=hostile)
    inert(
        render(
            dataclasses.replace(report, a=named, notes=(hostile,)), "markdown", include_none=True
        )
    )
