"""What a rerun and a bisect conclude (``prove/results.py``): the JSON the command line prints,
the exit codes, and the one line of what a proof cost. The search's use of them is in
``test_search.py``."""

from __future__ import annotations

import json

import pytest

from mlflow_fingerprint.prove.results import (
    EXIT_NOT_PROVEN,
    EXIT_PROVEN,
    BisectResult,
    Cause,
    DryRun,
    MachineGap,
    Rerun,
    RerunResult,
)


def rerun(run_id: str, matches: str = "a", wall_s: float | None = 1.23456) -> Rerun:
    return Rerun(run_id, {"seeds.requested": 1}, matches, 3, 5, frozenset({"x"}), wall_s)  # type: ignore[arg-type]


def test_a_rerun_shows_its_overrides_and_a_rounded_wall_time_but_not_what_it_had_in_effect() -> (
    None
):
    shown = rerun("r1").to_dict()
    assert shown == {
        "run_id": "r1",
        "overrides": {"seeds.requested": 1},
        "matches": "a",
        "first_divergence_step": 3,
        "stopped_at": 5,
        "wall_s": 1.23,
    }
    assert rerun("r2", wall_s=None).to_dict()["wall_s"] is None
    with pytest.raises(ValueError, match="rerun match"):
        rerun("r3", matches="c")


def test_a_proven_bisect_exits_0_and_its_json_holds_every_list() -> None:
    result = BisectResult(
        "proven",
        "A",
        "B",
        7,
        causes=(Cause("seeds.requested", 0, 1, "randomness", ("seeds.torch_initial_seed",)),),
        ruled_out=("data.num_workers",),
        reruns=(rerun("r1"), rerun("r2", "b")),
        rounds=2,
        jobs=4,
        wall_s=41.234,
    )
    assert result.exit_code == EXIT_PROVEN
    shown = result.to_dict()
    assert json.loads(json.dumps(shown)) == shown  # what the command line prints is JSON
    assert shown["causes"] == [
        {
            "field": "seeds.requested",
            "a": 0,
            "b": 1,
            "effect": "randomness",
            "sets": ["seeds.torch_initial_seed"],
        }
    ]
    assert shown["ruled_out"] == ["data.num_workers"]
    assert shown["cannot_set"] == []
    assert [r["run_id"] for r in shown["reruns"]] == ["r1", "r2"]
    assert (shown["rounds"], shown["jobs"], shown["wall_s"]) == (2, 4, 41.2)
    assert result.cost() == "2 rerun(s) in 2 round(s) (up to 4 at a time), 41.2 s"


def test_a_bisect_without_a_cause_exits_1_whatever_its_verdict() -> None:
    for verdict in ("not_settable", "not_reproducible", "nondeterministic"):
        assert BisectResult(verdict, "A", "B", None).exit_code == EXIT_NOT_PROVEN  # type: ignore[arg-type]
    # a nondeterministic bisect that found its switch names it, and proves it
    switch = Cause("determinism.cudnn_benchmark", True, False, "randomness")
    assert BisectResult("nondeterministic", "A", "B", None, (switch,)).exit_code == EXIT_PROVEN


def test_a_rerun_result_says_whether_it_reproduced_and_how_the_machine_differs() -> None:
    gap = MachineGap("torch.version", "2.5.0", "2.6.0")
    result = RerunResult(
        "r2", "r1", {"seeds.requested": 1}, False, 4, 6, 6, (gap,), ("acc",), 2.345, ("n",)
    )
    assert result.exit_code == 1
    shown = result.to_dict()
    assert shown["machine_differs"] == [{"field": "torch.version", "run": "2.5.0", "here": "2.6.0"}]
    assert shown["summary_differs"] == ["acc"]
    assert shown["wall_s"] == 2.35
    assert shown["reproduced"] is False
    assert shown["first_divergence_step"] == 4
    same = RerunResult("r2", "r1", {}, True, None, None, None)
    assert same.exit_code == 0
    assert same.to_dict()["wall_s"] is None


def test_a_dry_run_exits_0_and_lists_each_launch_with_what_it_is() -> None:
    dry = DryRun(
        "bisect",
        ("A", "B"),
        (("the first rerun", {"argv": ["train.py"]}),),
        settable=({"field": "seeds.requested", "a": 0, "b": 1, "how": "apply"},),
        cannot_set=("gpu.devices",),
        notes=("n",),
        until_step=4,
    )
    assert dry.exit_code == 0
    assert dry.to_dict() == {
        "dry_run": True,
        "command": "bisect",
        "runs": ["A", "B"],
        "until_step": 4,
        "launches": [{"what": "the first rerun", "argv": ["train.py"]}],
        "settable": [{"field": "seeds.requested", "a": 0, "b": 1, "how": "apply"}],
        "cannot_set": ["gpu.devices"],
        "notes": ["n"],
    }
