"""The verdicts of ``explain``'s analysis on simulated experiments whose answer is known: a real
effect, pure noise, an effect too small to tell, an interaction, no replicates, seeds only, and
what no field accounts for."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mlflow_fingerprint.explain.analysis import analyse
from mlflow_fingerprint.explain.groups import replicate_key
from mlflow_fingerprint.explain.table import FieldInfo, Table
from support.blocks import columns_of, texts_in


def simulated(rng: np.random.Generator, effects: dict[str, float], seeds: int = 3, noise=0.05):
    """A 2x2x2 design crossed with seeds: y = sum of each field's effect where it is 'on'."""
    rows = list(itertools.product([0, 1], [0, 1], [0, 1], range(seeds)))
    names = ["program.call.a", "program.call.b", "torch.threads.intra_op"]
    on = np.array([r[:3] for r in rows])
    y = on @ np.array([effects.get(n, 0.0) for n in names]) + rng.normal(0, noise, len(rows))
    texts = {n: tuple(str(v) for v in on[:, i]) for i, n in enumerate(names)}
    texts["seeds.requested"] = tuple(str(r[3]) for r in rows)
    fields = tuple(FieldInfo(n, "recipe", "", (0, 0, i, n)) for i, n in enumerate(names))
    keys = tuple(replicate_key(None, {n: texts[n][i] for n in names}) for i in range(len(rows)))
    return Table(fields, columns_of(texts), ("seeds.requested",), (), keys), y


def verdicts(table: Table, y: np.ndarray) -> dict[str, str]:
    return {f.label: f.verdict for f in analyse(table, y).factors}


def test_a_real_effect_is_important_and_a_null_field_ruled_out() -> None:
    table, y = simulated(np.random.default_rng(0), {"program.call.a": 1.0, "program.call.b": 0.3})
    found = verdicts(table, y)
    assert found["program.call.a"] == "important"
    assert found["program.call.b"] == "important"
    assert found["torch.threads.intra_op"] == "ruled_out"


def test_pure_noise_is_never_called_important() -> None:
    """Twenty experiments where no field does anything: Holm and the interval keep every field
    out of 'important' (a test at 5% per field would let a few through)."""
    called = 0
    for seed in range(20):
        table, y = simulated(np.random.default_rng(seed), {}, noise=1.0)
        called += sum(v == "important" for v in verdicts(table, y).values())
    assert called <= 1


def test_an_effect_smaller_than_the_runs_can_tell_is_undecided_not_ruled_out() -> None:
    table, y = simulated(np.random.default_rng(4), {"program.call.a": 0.3}, seeds=2, noise=1.0)
    assert verdicts(table, y)["program.call.a"] == "undecided"


def test_an_interaction_without_main_effects_is_found() -> None:
    rng = np.random.default_rng(1)
    table, _ = simulated(rng, {})
    a = np.array([int(v) for v in texts_in(table.columns["program.call.a"])])
    b = np.array([int(v) for v in texts_in(table.columns["program.call.b"])])
    y = 1.0 * a + 0.5 * b + 1.0 * (a ^ b) + rng.normal(0, 0.05, len(a))
    found = analyse(table, y)
    (interaction,) = [f for f in found.factors if f.kind == "interaction"]
    assert interaction.fields == ("program.call.a", "program.call.b")
    assert interaction.verdict == "important"
    # each pair of values a level, over the runs that hold that pair
    own = np.array([f"{x} × {z}" for x, z in zip(a, b, strict=True)])
    assert {lv.value: lv.n for lv in interaction.by_value} == dict.fromkeys(set(own), 6)
    for level in interaction.by_value:
        assert level.mean == pytest.approx(y[own == level.value].mean())


def test_without_replicates_the_noise_is_the_residual_and_says_so() -> None:
    table, y = simulated(np.random.default_rng(2), {"program.call.a": 1.0}, seeds=1)
    found = analyse(table, y)
    assert found.noise.groups == 0
    assert found.noise.sd is not None
    assert any("no two runs are replicates" in n for n in found.notes)


def test_runs_that_differ_only_in_their_seeds_are_all_noise() -> None:
    texts = {"seeds.requested": tuple(str(s) for s in range(6))}
    table = Table((), columns_of(texts), ("seeds.requested",), (), ((),) * 6)
    found = analyse(table, np.array([1.0, 1.2, 0.9, 1.1, 1.05, 0.95]))
    assert found.factors == ()
    assert (found.noise.groups, found.noise.runs, found.noise.share) == (1, 6, 1.0)
    assert found.noise.sd == pytest.approx(np.std([1.0, 1.2, 0.9, 1.1, 1.05, 0.95], ddof=1))


def test_what_no_field_accounts_for_is_said_to_be_unexplained() -> None:
    """A metric driven by the three fields together (their parity), which no main effect or pair
    of them carries: nothing is called important, and the report says most of the spread is
    neither a recorded field nor the noise."""
    from mlflow_fingerprint.explain.result import Explanation
    from mlflow_fingerprint.present.explain.words import headline

    table, _ = simulated(np.random.default_rng(5), {})
    on = np.array(
        [[int(texts_in(table.columns[f.path])[i]) for f in table.fields] for i in range(24)]
    )
    y = (on.sum(axis=1) % 2) + np.random.default_rng(6).normal(0, 0.05, 24)
    found = analyse(table, y)
    assert not [f for f in found.factors if f.verdict == "important"]
    report = Explanation(
        "x", "1", "m", "final", 24, float(y.mean()), float(y.std()), found.noise, found.factors
    )
    assert "Unexplained: " in headline(report)
