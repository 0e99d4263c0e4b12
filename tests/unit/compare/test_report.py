"""The comparator's result (``compare/report.py``): the exit code a diff gives, the JSON contract
every renderer reads, and how values JSON cannot hold are written (absent and non-finite: null)."""

from __future__ import annotations

import json
import math

import pytest

from mlflow_fingerprint.compare.diff import diff
from mlflow_fingerprint.compare.report import (
    EXIT_DIFFER,
    EXIT_SAME,
    Difference,
    MetricComparison,
    Report,
    RunRef,
    Spread,
    json_float,
    json_value,
    within_noise,
)
from mlflow_fingerprint.model.missing import MISSING
from support.records import cpu_record, seeded

RUN = "0123456789abcdef0123456789abcdef"


def metric(name: str, a: float, b: float, spread: Spread | None = None) -> MetricComparison:
    return MetricComparison(
        name, a, b, abs(b - a), None, a == b, a == b, None if a == b else 3, 10, 10, spread=spread
    )


def difference(effect: str) -> Difference:
    return Difference("seeds.requested", None, 4, effect, "why", "knowledge", 1)  # type: ignore[arg-type]


def test_a_run_is_labelled_by_its_name_and_short_id_and_a_file_by_its_path() -> None:
    assert RunRef("x", RUN, "run", "baseline").label == "baseline (01234567)"
    assert RunRef("x", RUN, "run").label == "01234567"
    assert RunRef("a.json", None, "file").label == "a.json"
    assert RunRef("x", RUN, "run", "n", "3").to_dict() == {
        "ref": "x", "run_id": RUN, "kind": "run", "name": "n", "experiment_id": "3"
    }  # fmt: skip
    assert RunRef("a.json", None, "file").to_dict() == {
        "ref": "a.json", "run_id": None, "kind": "file"
    }  # fmt: skip


def test_words_outside_the_vocabulary_are_refused() -> None:
    with pytest.raises(ValueError, match="reference kind"):
        RunRef("x", kind="url")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="effect"):
        difference("maybe")
    with pytest.raises(ValueError, match="verdict"):
        Report("different", RunRef("a"), RunRef("b"))  # type: ignore[arg-type]


def test_values_json_cannot_hold_are_written_as_null() -> None:
    assert json_value(MISSING) is None
    assert json_value((1, (2, MISSING))) == [1, [2, None]]
    assert json_value({"k": 1}) == {"k": 1}
    assert [json_float(v) for v in (math.nan, math.inf, -math.inf, None, 0.5)] == [
        None, None, None, None, 0.5
    ]  # fmt: skip
    spread = Spread(3, math.nan, 0.1, 0.2, outside=False)
    out = metric("loss", math.inf, 1.0, spread).to_dict()
    assert (out["a"], out["abs_diff"], out["replicates"]["std"]) == (None, None, None)
    assert out["replicates"]["band"] is None  # no band measured: nan
    json.dumps(out, allow_nan=False)  # strict JSON


def test_the_band_says_which_replicates_it_rests_on() -> None:
    across = Spread(4, 0.1, 0.0, 0.3, outside=True, band=0.3, groups=("A", "B"))
    assert (across.kind, across.runs) == ("across_seeds", 4)
    same = Spread(2, 0.0, 0.0, 0.0, outside=False, band=0.0, parts_at=7, seed=0)
    assert same.kind == "same_seed"
    assert same.to_dict()["parts_at"] == 7
    assert same.to_dict()["groups"] == []
    # looked for replicates and found too few: the JSON says null, not a missing key
    no_band = MetricComparison("loss", 1.0, 2.0, 1.0, 1.0, False, False, 0, 3, 3, no_band=True)
    assert no_band.to_dict()["replicates"] is None
    assert "replicates" not in metric("loss", 1.0, 2.0).to_dict()


def test_within_noise_needs_every_differing_metric_inside_a_band() -> None:
    inside = Spread(3, 0.1, 0.0, 0.3, outside=False)
    outside = Spread(3, 0.1, 0.0, 0.3, outside=True)
    assert within_noise([metric("loss", 1.0, 1.1, inside), metric("acc", 1.0, 1.0)])
    assert not within_noise([metric("loss", 1.0, 1.1, inside), metric("acc", 1.0, 2.0)])
    assert not within_noise([metric("loss", 1.0, 1.1, outside)])
    assert not within_noise([metric("loss", 1.0, 1.0)])  # nothing differs: nothing to judge


@pytest.mark.parametrize(
    ("verdict", "effects", "code"),
    [
        ("same_results", ("none",), EXIT_SAME),
        ("no_metrics", (), EXIT_SAME),
        ("same_results", ("randomness",), EXIT_DIFFER),
        ("explained", ("none",), EXIT_DIFFER),
        ("unexplained", (), EXIT_DIFFER),
    ],
)
def test_the_exit_code_is_zero_only_when_nothing_that_matters_differs(
    verdict: str, effects: tuple[str, ...], code: int
) -> None:
    report = Report(verdict, RunRef("a"), RunRef("b"), tuple(map(difference, effects)))  # type: ignore[arg-type]
    assert report.exit_code == code


def test_differences_that_change_nothing_are_hidden_unless_asked_for() -> None:
    report = Report(
        "explained", RunRef("a"), RunRef("b"), (difference("none"), difference("randomness"))
    )
    assert [d.effect for d in report.effective_differences] == ["randomness"]
    shown = report.to_dict()
    assert [d["effect"] for d in shown["differences"]] == ["randomness"]
    assert shown["hidden_differences"] == 1
    every = report.to_dict(include_none=True)
    assert len(every["differences"]) == 2
    assert every["hidden_differences"] == 0


def test_a_real_diff_of_two_seeds_writes_the_contract() -> None:
    report = diff(cpu_record(), seeded(cpu_record(), 4))
    out = json.loads(json.dumps(report.to_dict(include_none=True), allow_nan=False))
    assert set(out) >= {
        "verdict", "exit_code", "a", "b", "differences", "enablers", "metrics", "notes"
    }  # fmt: skip
    assert out["verdict"] == "no_metrics"
    assert out["a"]["kind"] == "object"
    seed = next(d for d in out["differences"] if d["field"] == "seeds.requested")
    assert (seed["a"], seed["b"]) == (None, 4)  # absent in A: null
    assert out["exit_code"] == report.exit_code == EXIT_DIFFER
    assert out["tolerance"] == {"atol": 0.0, "rtol": 0.0}
