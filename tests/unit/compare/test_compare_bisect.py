"""The bisect's search and what a rerun can set (``compare/bisect.py``, ``compare/settable.py``).

The search is driven here by an oracle that says which curve a rerun with a given set of knobs
would follow, as a training does: a set that holds a cause leaves A's curve. The system tests
(``tests/system/test_bisect.py``) drive it with real reruns.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pytest

from mlflow_fingerprint.compare.bisect import (
    Rerun,
    Search,
    conclude,
    find_causes,
    find_switch,
)
from mlflow_fingerprint.compare.report import Difference
from mlflow_fingerprint.compare.settable import Knob, code_knobs, knob_for, options_with, split
from mlflow_fingerprint.model.missing import MISSING


def knobs(n: int) -> list[Knob]:
    return [Knob("option", f"o{i}", f"program.options.o{i}", 0, 1, "recipe") for i in range(n)]


def oracle(causes: set[Knob], together: bool = False):
    """A training in which ``causes`` move the numbers: each alone, or only all together."""
    calls: list[frozenset[Knob]] = []

    def attempt(applied: Sequence[Knob]):
        calls.append(frozenset(applied))
        hit = causes <= set(applied) if together else bool(causes & set(applied))
        if not hit:
            return "a"
        return "b" if causes <= set(applied) else "neither"

    return attempt, calls


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 13])
def test_one_cause_among_k_costs_at_most_log2_k_plus_1_reruns_after_the_baseline(k: int) -> None:
    for index in range(k):
        ks = knobs(k)
        attempt, calls = oracle({ks[index]})
        search = Search(attempt)
        assert find_causes(ks, search) == [ks[index]]
        assert len(calls) <= math.ceil(math.log2(k)) + 1, (k, index, calls)
        # and every other knob was applied in a rerun that kept A's curve
        reruns = [
            Rerun(str(i), {x.field: 1 for x in s}, m, None, None, frozenset(x.field for x in s))
            for i, (s, m) in enumerate(search.seen.items())
        ]
        end = conclude([ks[index]], ks, reruns)
        assert set(end.ruled_out) == {x.field for x in ks} - {ks[index].field}
        assert end.untested == ()


def test_two_knobs_that_each_move_the_numbers_are_both_found() -> None:
    ks = knobs(6)
    attempt, _ = oracle({ks[1], ks[4]})
    found = find_causes(ks, Search(attempt))
    assert found is not None
    assert set(found) == {ks[1], ks[4]}


def test_causes_that_act_only_together_are_found_together() -> None:
    ks = knobs(6)
    attempt, _ = oracle({ks[0], ks[5]}, together=True)
    found = find_causes(ks, Search(attempt))
    assert found is not None
    assert set(found) == {ks[0], ks[5]}


def test_nothing_found_where_no_knob_moves_the_numbers() -> None:
    attempt, calls = oracle(set())
    assert find_causes(knobs(4), Search(attempt)) is None
    assert frozenset(knobs(4)) in calls  # everything was tried together before giving up


def test_a_set_is_never_rerun_twice() -> None:
    ks = knobs(5)
    attempt, calls = oracle({ks[2]})
    find_causes(ks, Search(attempt))
    assert len(calls) == len(set(calls))


def test_the_first_switch_that_reproduces_is_named() -> None:
    ks = knobs(3)
    assert find_switch(ks, lambda k: k is not ks[0]) is ks[1]
    assert find_switch(ks, lambda k: False) is None


def diff(field: str, a: object, b: object, effect: str = "recipe") -> Difference:
    return Difference(field, a, b, effect, "", "", 1)  # type: ignore[arg-type]


def test_split_sorts_differences_by_what_a_rerun_can_do() -> None:
    found = split(
        [
            diff("seeds.requested", 0, 1, "randomness"),
            diff("program.options.lr", "0.1", "0.2"),
            diff("data.loaders.0.num_workers", 0, 2, "randomness"),
            diff("data.loaders.1.num_workers", 0, 2, "randomness"),
            diff("torch.threads.env.OMP_NUM_THREADS", None, "1", "numerics"),
            diff("gpu.devices.0.name", "NVIDIA H100", MISSING, "numerics"),
            diff("seeds.torch_initial_seed", 0, 1, "randomness"),
            diff("platform.hostname", "a", "b", "none"),
            diff("platform.pid", 1, 2, "none"),
        ]
    )
    assert [(k.kind, k.key) for k in found.knobs] == [
        ("apply", "seeds.requested"),
        ("option", "lr"),
        ("apply", "data.num_workers"),
        ("env", "OMP_NUM_THREADS"),
    ]
    assert [d.field for d in found.cannot_set] == ["gpu.devices.0.name"]
    assert [d.field for d in found.no_effect] == ["platform.hostname"]  # pid is noise


def test_a_value_a_rerun_cannot_force_is_no_knob() -> None:
    assert knob_for(diff("seeds.requested", 0, None, "randomness")) is None
    assert knob_for(diff("determinism.cudnn_benchmark", True, MISSING, "numerics")) is None


@pytest.mark.parametrize(
    ("argv", "changes", "expected"),
    [
        (
            ["t.py", "--lr", "0.1", "--seed", "0"],
            {"lr": "0.2"},
            ["t.py", "--lr", "0.2", "--seed", "0"],
        ),
        (["t.py", "--lr=0.1"], {"lr": "0.2"}, ["t.py", "--lr", "0.2"]),
        (
            ["t.py", "--deterministic", "--seed", "0"],
            {"deterministic": None},
            ["t.py", "--seed", "0"],
        ),
        (["t.py", "--seed", "0"], {"augment": True}, ["t.py", "--seed", "0", "--augment"]),
        (["t.py", "-n", "3"], {"n": "4"}, ["t.py", "-n", "4"]),
    ],
)
def test_options_are_replaced_added_and_removed(argv, changes, expected) -> None:
    assert options_with(argv, changes) == expected


def test_code_knobs_are_one_per_changed_file() -> None:
    found = code_knobs({"b.py": ("1", "2"), "a.py": (None, "3")})
    assert [(k.key, k.a, k.b) for k in found] == [("a.py", None, "3"), ("b.py", "1", "2")]
    assert all(k.field.startswith("program.sources.files.") for k in found)


def test_every_order_of_one_cause_is_found() -> None:
    base = knobs(4)
    for order in itertools.permutations(base):
        attempt, _ = oracle({base[0]})
        assert find_causes(list(order), Search(attempt)) == [base[0]]


def test_a_misspelt_verdict_or_match_fails_at_construction() -> None:
    from mlflow_fingerprint.compare.bisect import BisectReport

    with pytest.raises(ValueError, match="bisect verdict"):
        BisectReport("proved", "a", "b", 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rerun match"):
        Rerun("r", {}, "A", None)  # type: ignore[arg-type]
