"""What ``explain`` found and its JSON (``explain/result.py``): docs/design.md's keys, numbers a
JSON document cannot hold written as null, and domain words checked when a result is made."""

from __future__ import annotations

import json
import math

import pytest

from mlflow_fingerprint.explain.result import Explanation, Factor, Level, Missing, Noise


def factor(label: str, verdict: str, share: float = 0.5) -> Factor:
    levels = (Level("0.1", 3, 1.0, 0.1, (0.9, 1.0, 1.1)), Level("0.2", 3, 2.0, math.nan))
    return Factor((label,), label, share, (0.4, math.inf), levels, False, verdict)  # type: ignore[arg-type]


def test_the_json_holds_the_design_keys_and_no_number_json_cannot_hold() -> None:
    found = Explanation(
        "sweep", "7", "loss", "final", 6, 1.5, math.nan, Noise(0.1, 0.25, 2, 6, 4),
        (factor("program.call.lr", "important"), factor("torch.threads.intra_op", "ruled_out")),
        ruled_out=("torch.threads.intra_op",),
    )  # fmt: skip
    document = json.loads(json.dumps(found.to_dict(), allow_nan=False))
    design = {"metric", "at", "runs", "noise", "factors", "ruled_out", "outliers", "missing"}
    assert design | {"separate_by", "left_out"} <= set(document)
    assert document["experiment"] == {"name": "sweep", "id": "7"}
    assert document["sd"] is None
    lr = document["factors"][0]
    assert lr["interval"] == [0.4, None]
    assert lr["by_value"]["0.2"] == {"n": 3, "mean": 2.0, "sd": None, "values": []}
    assert lr["by_value"]["0.1"]["values"] == [0.9, 1.0, 1.1]
    assert [f.label for f in found.important] == ["program.call.lr"]
    assert found.undecided == ()


def test_a_word_outside_the_vocabulary_is_refused_when_the_result_is_made() -> None:
    with pytest.raises(ValueError, match="factor verdict 'likely'"):
        factor("program.call.lr", "likely")
    with pytest.raises(ValueError, match="coverage 'some'"):
        Missing(coverage={"run": "some"})  # type: ignore[dict-item]
