"""The bisect's search (``prove/search.py``) and its results (``prove/results.py``).

The search is driven here by an oracle that says which curve a rerun with a given set of knobs
would follow, as a training does: a set that holds a cause leaves A's curve. The system tests
(``tests/system/bisect/``) drive it with real reruns.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pytest

from mlflow_fingerprint.compare.settable import Knob
from mlflow_fingerprint.prove.results import BisectResult, Rerun
from mlflow_fingerprint.prove.search import Search, conclude, find_causes, find_switch


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


def test_nothing_is_found_among_no_knobs_and_nothing_is_rerun() -> None:
    """Where every difference is one no rerun can set: no causes, never an empty list of them
    (which a caller would have taken for a proof)."""
    attempt, calls = oracle(set())
    assert find_causes([], Search(attempt)) is None
    assert calls == []


def test_a_set_is_never_rerun_twice() -> None:
    ks = knobs(5)
    attempt, calls = oracle({ks[2]})
    find_causes(ks, Search(attempt))
    assert len(calls) == len(set(calls))


def test_the_first_switch_that_reproduces_is_named() -> None:
    ks = knobs(3)
    assert find_switch(ks, lambda k: k is not ks[0]) is ks[1]
    assert find_switch(ks, lambda k: False) is None


def test_every_order_of_one_cause_is_found() -> None:
    base = knobs(4)
    for order in itertools.permutations(base):
        attempt, _ = oracle({base[0]})
        assert find_causes(list(order), Search(attempt)) == [base[0]]


def test_a_misspelt_verdict_or_match_fails_at_construction() -> None:
    with pytest.raises(ValueError, match="bisect verdict"):
        BisectResult("proved", "a", "b", 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rerun match"):
        Rerun("r", {}, "A", None)  # type: ignore[arg-type]


def test_proven_names_a_cause_and_the_lists_are_always_there() -> None:
    with pytest.raises(ValueError, match="at least one cause"):
        BisectResult("proven", "a", "b", 2)
    shown = BisectResult("not_settable", "a", "b", 2, cannot_set=("torch.version",)).to_dict()
    assert shown["ruled_out"] == []
    assert shown["cannot_set"] == ["torch.version"]
    assert BisectResult("not_settable", "a", "b", 2).exit_code == 1


def test_what_the_proven_seed_produced_is_beneath_it_and_never_ruled_out() -> None:
    """A seed 0 vs 1 bisect: the RNG digests read at the first step took B's values only in the
    rerun that had seed 1, so they are what the seed produced; a source digest a rerun keeping
    A's curve had B's value for is ruled out; a run name no rerun set is neither."""
    from mlflow_fingerprint.prove.bisection import measured_consequences

    seed = Knob("apply", "seeds.requested", "seeds.requested", 0, 1, "randomness")
    helper = Knob("code", "helpers.py", "program.sources.files.helpers.py", "x", "y", "recipe")
    digests = tuple(f"seeds.at_first_step.state_digests.{g}" for g in ("python", "torch_cpu"))
    code = "program.sources.files.helpers.py"
    reruns = [
        Rerun("base", {}, "a", None),
        Rerun("helper", {code: "y"}, "a", None, None, frozenset({code, "git.commit"})),
        Rerun(
            "seed", {"seeds.requested": 1}, "b", 1, None, frozenset({"seeds.requested", *digests})
        ),
    ]
    end = conclude([seed], [seed, helper], reruns)
    measured = (*digests, "git.commit", "run.name")
    (cause,), ruled = measured_consequences(end, measured, reruns)
    assert cause.field == "seeds.requested"
    assert set(digests) <= set(cause.sets)
    assert ruled == (code, "git.commit")


@pytest.mark.parametrize("width", [2, 4])
@pytest.mark.parametrize("k", [3, 8, 13])
def test_reruns_side_by_side_find_one_cause_in_few_rounds(width: int, k: int) -> None:
    """``--jobs``: the splits are chosen for rounds. With A's own rerun in the first round
    (``first_round``), one cause among 8 with 4 at a time takes 2 rounds (at most 3 is the
    promise), each round no wider than ``width``; every other knob is ruled out."""
    from mlflow_fingerprint.prove.search import first_round

    for index in range(k):
        ks = knobs(k)
        attempt, _ = oracle({ks[index]})
        rounds: list[int] = []

        def together(sets, attempt=attempt, rounds=rounds):
            rounds.append(len(sets))
            return [attempt(s) for s in sets]

        def alone(s, attempt=attempt, rounds=rounds):
            rounds.append(1)
            return attempt(s)

        search = Search(alone, together=together, width=width)
        beside = first_round(ks, width)
        search.taken = 1 if beside else 0
        assert search.ask([[], *beside])[0] == "a"  # the baseline, beside the first split
        assert find_causes(ks, search) == [ks[index]]
        assert max(rounds) <= width
        assert len(rounds) <= math.ceil(math.log(k) / math.log(width + 1)) + 2, (index, rounds)
        if (k, width) == (8, 4):
            assert len(rounds) <= 3
        ruled = {x for s, m in search.seen.items() if m == "a" for x in s}
        assert ruled == set(ks) - {ks[index]}
