"""The program rules (``compare/rules/program.py``) on the process's variables: a variable is a
cause only where a value the run logged shows it was read."""

from __future__ import annotations

from mlflow_fingerprint import diff
from support.records import cpu_record, edit, seeded


def test_a_variable_is_a_cause_only_where_a_logged_value_shows_it_was_read() -> None:
    """Every variable of the process is recorded (issue 47). ``MOMENTUM``, whose value the run
    logged as a param, is a recipe difference; ``JOB_TAG``, held by nothing the run logged, is
    listed as changing nothing shown (a harness's, a scheduler's), and bisect may still set it;
    NCCL's are recorded only under ``distributed.env``."""
    from mlflow_fingerprint.compare.settable import split
    from mlflow_fingerprint.model.variables import RECORDED_ELSEWHERE

    base = seeded(cpu_record(), 0)
    a = edit(base, **{"program.env.MOMENTUM": "0.9", "program.env.JOB_TAG": "x", "params.m": 0.9})
    b = edit(base, **{"program.env.MOMENTUM": "0.5", "program.env.JOB_TAG": "y", "params.m": 0.5})
    report = diff(a, b)
    found = {d.field: d for d in report.differences}
    read, unread = found["program.env.MOMENTUM"], found["program.env.JOB_TAG"]
    assert read.effect == "recipe"
    assert "params.m holds its value in both runs" in read.explanation
    assert unread.effect == "none"
    assert "nothing shows the program read it" in unread.explanation
    assert "program.env.JOB_TAG" not in {d.field for d in report.effective_differences}
    assert {k.field for k in split(report.differences).knobs} >= {
        "program.env.MOMENTUM",
        "program.env.JOB_TAG",
    }
    assert {"NCCL_ALGO", "NCCL_PROTO"} <= RECORDED_ELSEWHERE


def test_a_variable_one_run_lacks_is_read_only_where_the_logged_value_moved_with_it() -> None:
    """A ran without ``SCALE`` (the program's default), B with ``SCALE=4``: B's ``params.scale``
    holds 4 where A's holds 1, so the program read it. ``HINT=2`` in B alone, with a worker
    count of 2 logged by both runs, shows nothing: the 2 was there without the variable."""
    base = seeded(cpu_record(), 0)
    a = edit(base, **{"program.env.USER_KNOB": "x", "params.scale": "1", "params.workers": "2"})
    b = edit(
        base,
        **{
            "program.env.USER_KNOB": "x",
            "program.env.SCALE": "4",
            "program.env.HINT": "2",
            "params.scale": "4",
            "params.workers": "2",
        },
    )
    found = {d.field: d for d in diff(a, b).differences}
    scale = found["program.env.SCALE"]
    assert scale.effect == "recipe"
    assert "params.scale holds its value in B, and another in A" in scale.explanation
    assert found["program.env.HINT"].effect == "none"


def test_two_variables_with_one_value_are_told_apart_by_name_or_left_to_a_rerun() -> None:
    """B sets ``LR_SCALE=4`` and ``SHARDS=4``; its ``params.lr_scale`` went from 1 to 4. The
    param is named after ``LR_SCALE``: that one is the recipe change, ``SHARDS`` shows nothing.
    With ``params.factor`` instead, nothing tells them apart: both are candidates, and each
    explanation says a rerun must tell."""
    base = seeded(cpu_record(), 0)
    env = {"program.env.USER_KNOB": "x"}
    both = {"program.env.LR_SCALE": "4", "program.env.SHARDS": "4"}
    for param, owner in (("lr_scale", "LR_SCALE"), ("factor", None)):
        a = edit(base, **env, **{f"params.{param}": "1"})
        b = edit(base, **env, **both, **{f"params.{param}": "4"})
        found = {d.field: d for d in diff(a, b).differences}
        scale, shards = found["program.env.LR_SCALE"], found["program.env.SHARDS"]
        if owner:
            assert (scale.effect, shards.effect) == ("recipe", "none")
            assert "named after LR_SCALE" in shards.explanation
            assert "So does" not in scale.explanation
        else:
            assert (scale.effect, shards.effect) == ("recipe", "recipe")
            assert "So does SHARDS" in scale.explanation
            assert "So does LR_SCALE" in shards.explanation
