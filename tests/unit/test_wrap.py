"""Fitting the text report to a width: never a cut inside a word or a name (issue 29 saw
``mlflow_fingerprint.run.seedin…``), and a report with many changes still one screen wide."""

from __future__ import annotations

import shlex

from mlflow_fingerprint import diff
from mlflow_fingerprint.present import render
from mlflow_fingerprint.wrap import command_lines, shorten, wrap
from support.records import cpu_record, edit


def test_a_value_is_shortened_after_a_dot_or_a_space_never_inside_a_name():
    assert shorten("mlflow_fingerprint.run.seeding.seed_worker", 30) == "mlflow_fingerprint.run.…"
    assert shorten("drives shuffling and worker seeds", 20) == "drives shuffling…"
    assert shorten("short", 30) == "short"


def test_wrapped_lines_keep_their_width_and_every_word():
    text = (
        "a " * 30 + "data.loaders.0.generator.initial_seed.and.a.very.long.dotted.name.of.a.field"
    )
    lines = wrap(text, 40, "  ", "note: ")
    assert max(map(len, lines)) <= 40
    assert lines[0].startswith("note: a a")
    assert "".join(ln.strip() for ln in lines).replace(" ", "") == ("note:" + text).replace(" ", "")
    row = "loss       2.2   2.3"
    assert wrap(row, 40) == [row]  # a line that fits keeps its alignment


def test_many_changes_show_the_five_most_likely_within_100_columns():
    record = cpu_record()
    other = edit(
        record,
        **{
            "torch.threads.intra_op": 7,
            "torch.threads.inter_op": 3,
            "determinism.cudnn_benchmark": True,
            "determinism.deterministic_algorithms": True,
            "seeds.pythonhashseed": "1",
            "numerics.fp32_precision.cuda_matmul": "tf32",
            "torch.version": "2.9.0+cpu",
            "numerics.fp32_precision.cudnn_conv": "tf32",
            "git.dirty": True,
            "git.commit": "0" * 40,
        },
    )
    report = diff(record, other)
    assert len(report.effective_differences) > 5
    text = render(report, "text")
    lines = text.splitlines()
    assert max(map(len, lines)) <= 100, text
    assert [ln.split()[0] for ln in lines if ln[:3].rstrip().isdigit()] == ["1", "2", "3", "4", "5"]
    more = len(report.effective_differences) - 5
    assert f"{more} more that can change results" in text
    everything = render(report, "text", include_none=True)
    assert all(d.field in everything for d in report.effective_differences)


def test_fit_wraps_every_line_at_words_and_keeps_numbers_whole(monkeypatch):
    from mlflow_fingerprint.wrap import columns, fit

    line = "   source: " + " ".join(["0.0030446053", "https://docs.example.org/a/b.html"] * 6)
    fitted = fit(line, 40).splitlines()
    assert max(map(len, fitted)) <= 40
    assert fitted[1].startswith("     ")  # under the line it continues, two further in
    assert " ".join(" ".join(fitted).split()) == " ".join(line.split())
    number = "0.003044605300000000000001"  # longer than the line: still one word
    assert wrap(f"x x x {number}", 20) == ["x x x", number]
    monkeypatch.setenv("COLUMNS", "72")
    assert columns() == 72
    monkeypatch.setenv("COLUMNS", "5")
    assert columns() == 40  # narrower than a report can read: 40
    monkeypatch.setenv("COLUMNS", "wide")
    assert columns() == 100  # not a number: the default (the tests' output is no terminal)


def test_a_command_breaks_only_between_its_words_and_pastes_back_whole() -> None:
    """A closing line's command: a path longer than the line stays one word (broken at its
    underscore, the pasted command named another file), and the lines join back to it."""
    path = "sqlite:////tmp/pytest-of-root/pytest-99/popen-gw0/test_each_run_prints_a_command0/x.db"
    command = f"fingerprint show 0f8143ffe00140b288e9d8699f163cf7 --tracking-uri {path}"
    text = command_lines(command, width=60)
    assert path in text.splitlines()[-1]
    assert shlex.split(text.replace("\\\n", " ")) == shlex.split(command)
    assert all(len(line) <= 60 for line in text.splitlines() if path not in line)
