"""The statistics behind ``explain``, on designs whose answer is known: Type II sums of squares
against a run-level least squares written here, the F test against scipy, blocks of fields that
moved together, the noise floor, outliers, seeds, and the verdicts on simulated experiments."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from mlflow_fingerprint.explain.analysis import analyse
from mlflow_fingerprint.explain.anova import anova, cells
from mlflow_fingerprint.explain.design import blocks, column, cramers_v, treatment
from mlflow_fingerprint.explain.ftest import f_survival, holm
from mlflow_fingerprint.explain.groups import (
    Groups,
    is_seed_field,
    noise_floor,
    outliers,
    replicate_key,
)
from mlflow_fingerprint.explain.table import FieldInfo, Table


def texts_of(**columns: object) -> dict[str, tuple[str, ...]]:
    return {name: tuple(str(v) for v in values) for name, values in columns.items()}


def design_blocks(texts: dict[str, tuple[str, ...]]):
    return blocks([column(name, values) for name, values in texts.items()], texts)


# --- Type II sums of squares ---------------------------------------------------------------------


def run_level_rss(y: np.ndarray, parts: list[np.ndarray]) -> float:
    matrix = np.column_stack([np.ones(len(y)), *parts])
    beta = np.linalg.lstsq(matrix, y, rcond=None)[0]
    residual = y - matrix @ beta
    return float(residual @ residual)


def test_type_ii_on_cells_equals_run_level_least_squares_on_an_unbalanced_design() -> None:
    rng = np.random.default_rng(3)
    n = 60
    a, b, c = rng.integers(0, 3, n), rng.integers(0, 2, n), rng.integers(0, 4, n)
    y = 0.5 * a + 0.2 * b + 0.7 * ((a == 2) & (b == 1)) + rng.normal(0, 0.3, n)
    found = design_blocks(texts_of(a=a, b=b, c=c))
    assert [blk.fields for blk in found] == [("a",), ("b",), ("c",)]
    terms = [(0,), (1,), (2,), (0, 1)]
    design = cells(found, terms, n)
    fitted = anova(design, design.sample(y))
    x = {(i,): treatment(found[i].codes, found[i].levels) for i in range(3)}
    ab = (x[(0,)][:, :, None] * x[(1,)][:, None, :]).reshape(n, -1)
    full = run_level_rss(y, [x[(0,)], x[(1,)], x[(2,)], ab])
    mains = run_level_rss(y, [x[(0,)], x[(1,)], x[(2,)]])
    expected = {
        (0,): run_level_rss(y, [x[(1,)], x[(2,)]]) - mains,  # A given B, C; not A x B
        (1,): run_level_rss(y, [x[(0,)], x[(2,)]]) - mains,
        (2,): run_level_rss(y, [x[(0,)], x[(1,)], ab]) - full,
        (0, 1): mains - full,
    }
    for term, ss in expected.items():
        assert fitted.terms[term].ss == pytest.approx(ss, rel=1e-9)
    assert [fitted.terms[t].df for t in terms] == [2, 1, 3, 2]
    assert fitted.rss == pytest.approx(full, rel=1e-9)
    assert fitted.df_error == n - 1 - 2 - 1 - 3 - 2


def test_balanced_main_effect_is_the_textbook_sum_of_squares() -> None:
    a, b = np.repeat([0, 1, 2], 8), np.tile(np.repeat([0, 1], 4), 3)
    y = np.random.default_rng(0).normal(size=24) + a
    found = design_blocks(texts_of(a=a, b=b))
    design = cells(found, [(0,), (1,)], 24)
    fitted = anova(design, design.sample(y))
    means = np.array([y[a == k].mean() for k in range(3)])
    assert fitted.terms[(0,)].ss == pytest.approx(8 * ((means - y.mean()) ** 2).sum())


def test_a_bootstrap_sample_is_the_same_runs_counted_again() -> None:
    a = np.array([0, 0, 1, 1, 2, 2])
    y = np.array([1.0, 1.5, 2.0, 2.5, 4.0, 3.0])
    design = cells(design_blocks(texts_of(a=a)), [(0,)], 6)
    picks = np.array([0, 0, 3, 4, 5, 5])
    resampled = anova(design, design.sample(y, picks))
    again = cells(design_blocks(texts_of(a=a[picks])), [(0,)], 6)
    direct = anova(again, again.sample(y[picks]))
    assert resampled.terms[(0,)].ss == pytest.approx(direct.terms[(0,)].ss)


# --- F test and Holm ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("f", "df1", "df2"),
    [(0.5, 1, 16), (4.0, 1, 16), (3.2, 3, 40), (25.0, 2, 5), (1.0, 10, 200), (80.0, 1, 900)],
)
def test_f_survival_agrees_with_scipy(f: float, df1: int, df2: int) -> None:
    assert f_survival(f, df1, df2) == pytest.approx(stats.f.sf(f, df1, df2), rel=1e-9, abs=1e-15)


def test_holm_steps_down() -> None:
    assert holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])


# --- Blocks of fields that moved together -----------------------------------------------------


def test_fields_with_the_same_partition_are_one_block_of_two_settings() -> None:
    gpu = ["A100", "A100", "H100", "H100"] * 3
    torch = ["2.5", "2.5", "2.7", "2.7"] * 3
    found = design_blocks(texts_of(gpu=gpu, torch=torch, seedless=[0, 1] * 6))
    assert [b.fields for b in found] == [("gpu", "torch"), ("seedless",)]
    assert found[0].confounded
    assert found[0].labels == ("gpu=A100, torch=2.5", "gpu=H100, torch=2.7")


def test_the_same_value_recorded_twice_is_one_setting_not_a_confound() -> None:
    lr = [0.1, 0.1, 0.01, 0.01] * 3
    found = design_blocks(texts_of(**{"params.lr": lr, "program.call.lr": lr}))
    assert [b.fields for b in found] == [("params.lr", "program.call.lr")]
    assert not found[0].confounded


def test_a_field_nested_in_another_is_merged_by_the_rank_deficit() -> None:
    driver = ["535", "535", "550", "550", "560", "560"] * 2  # three drivers
    arch = ["ampere", "ampere", "hopper", "hopper", "hopper", "hopper"] * 2  # a function of it
    found = design_blocks(texts_of(driver=driver, arch=arch))
    assert [b.fields for b in found] == [("driver", "arch")]


def test_three_fields_aliased_together_are_merged() -> None:
    """Three flags of which exactly one is on (``--adam``, ``--sgd``, ``--rmsprop``): any two
    can be told apart, the three together cannot (their columns add up to the intercept)."""
    one_hot = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]] * 4)
    other = np.arange(12) % 2
    found = design_blocks(
        texts_of(adam=one_hot[:, 0], sgd=one_hot[:, 1], rmsprop=one_hot[:, 2], width=other)
    )
    assert [blk.fields for blk in found] == [("adam", "sgd", "rmsprop"), ("width",)]


def test_xor_of_two_fields_is_a_separate_main_effect() -> None:
    """c = a xor b is aliased with the a x b interaction, not with a or b: a main-effects model
    tells the three apart (a half fraction of a 2^3 design)."""
    a, b = np.array([0, 0, 1, 1] * 4), np.array([0, 1, 0, 1] * 4)
    found = design_blocks(texts_of(a=a, b=b, c=a ^ b))
    assert [blk.fields for blk in found] == [("a",), ("b",), ("c",)]


def test_near_aliasing_by_cramers_v_merges_and_says_so() -> None:
    a = np.array([0] * 12 + [1] * 12)
    b = a.copy()
    b[0] = 1  # one run of 24 apart: separable by rank, not in practice
    assert cramers_v(a, b) >= 0.9
    (block,) = design_blocks(texts_of(a=a, b=b))
    assert block.near
    crossed = design_blocks(texts_of(a=a, b=np.tile([0, 1], 12)))
    assert len(crossed) == 2


# --- Replicates, noise floor, outliers ----------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "seed"),
    [
        ("seeds.requested", True),
        ("seeds.torch_initial_seed", True),
        ("data.loaders.0.generator.initial_seed", True),
        ("seeds.seeded_by", True),  # the whole seeds section, as the comparator's replicates
        ("program.call.seed", True),
        ("program.options.data-seed", True),
        ("params.random_seed", True),
        ("program.options.no-seed-workers", False),
        ("params.seed_workers", False),
        ("program.call.lr", False),
    ],
)
def test_which_fields_hold_a_seed(path: str, seed: bool) -> None:
    assert is_seed_field(path) is seed


def test_replicates_are_equal_but_for_their_seeds() -> None:
    a = {"program.call.lr": "0.1", "seeds.requested": "0", "program.call.seed": "0"}
    b = {"program.call.lr": "0.1", "seeds.requested": "1", "program.call.seed": "1"}
    c = {"program.call.lr": "0.2", "seeds.requested": "0", "program.call.seed": "0"}
    assert replicate_key(None, a) == replicate_key(None, b) != replicate_key(None, c)


def test_runs_with_whole_records_are_replicates_as_the_comparator_says() -> None:
    """The same key as diff's noise band: the records' replicate hash."""
    from support.records import cpu_record, edit, seeded

    base = edit(cpu_record(), **{"program.call.lr": 0.1, "program.call.seed": 0})
    twin = seeded(edit(base, **{"program.call.seed": 7}), 7)
    other = edit(base, **{"program.call.lr": 0.2})
    assert replicate_key(base, {}) == replicate_key(twin, {}) != replicate_key(other, {})
    assert replicate_key(base, {}) != replicate_key(None, {})


def test_noise_floor_is_the_within_group_spread_and_its_share() -> None:
    groups = Groups.of(["x", "x", "x", "y", "y", "y", "z"])
    y = np.array([1.0, 2.0, 3.0, 11.0, 12.0, 13.0, 20.0])
    floor = noise_floor(groups, y)
    assert (floor.groups, floor.runs, floor.df) == (2, 6, 4)
    assert floor.sd == pytest.approx(1.0)
    # one-way random effects: MS_between over the three groups, n0 for unequal sizes
    sizes, means = np.array([3, 3, 1]), np.array([2.0, 12.0, 20.0])
    ms_between = (sizes * (means - y.mean()) ** 2).sum() / 2
    n0 = (7 - (sizes**2).sum() / 7) / 2
    between = (ms_between - 1.0) / n0
    assert floor.share == pytest.approx(1.0 / (1.0 + between))


def test_no_replicates_no_noise_floor() -> None:
    floor = noise_floor(Groups.of(["a", "b", "c"]), np.array([1.0, 2.0, 3.0]))
    assert floor.sd is None
    assert floor.groups == 0


def test_the_odd_run_of_a_group_is_an_outlier_and_a_noisier_group_gives_at_most_one() -> None:
    tight = [[k + 0.01, k - 0.01, k + 0.005, k] for k in range(10, 15)]
    y = np.array([1.00, 1.01, 0.99, 1.80, 3.0, 3.3, 2.7, 3.1, 5.0, 5.2, *np.ravel(tight)])
    keys = ["a"] * 4 + ["c"] * 4 + ["pair"] * 2 + [f"t{i}" for i in range(5) for _ in range(4)]
    groups = Groups.of(keys)
    found = outliers(groups, y, noise_floor(groups, y))
    assert [o.run for o in found] == [3]  # 1.80 among 1.00; nothing in the noisier group c
    assert found[0].z > 3.5
    assert found[0].reference in (0, 1, 2)


# --- The verdicts on simulated experiments --------------------------------------------------------


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
    return Table(fields, texts, ("seeds.requested",), (), keys), y


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
    a = np.array([int(v) for v in table.texts["program.call.a"]])
    b = np.array([int(v) for v in table.texts["program.call.b"]])
    y = 1.0 * a + 0.5 * b + 1.0 * (a ^ b) + rng.normal(0, 0.05, len(a))
    found = analyse(table, y)
    (interaction,) = [f for f in found.factors if f.kind == "interaction"]
    assert interaction.fields == ("program.call.a", "program.call.b")
    assert interaction.verdict == "important"


def test_without_replicates_the_noise_is_the_residual_and_says_so() -> None:
    table, y = simulated(np.random.default_rng(2), {"program.call.a": 1.0}, seeds=1)
    found = analyse(table, y)
    assert found.noise.groups == 0
    assert found.noise.sd is not None
    assert any("no two runs are replicates" in n for n in found.notes)


def test_runs_that_differ_only_in_their_seeds_are_all_noise() -> None:
    texts = {"seeds.requested": tuple(str(s) for s in range(6))}
    table = Table((), texts, ("seeds.requested",), (), ((),) * 6)
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
    on = np.array([[int(table.texts[f.path][i]) for f in table.fields] for i in range(24)])
    y = (on.sum(axis=1) % 2) + np.random.default_rng(6).normal(0, 0.05, 24)
    found = analyse(table, y)
    assert not [f for f in found.factors if f.verdict == "important"]
    report = Explanation(
        "x", "1", "m", "final", 24, float(y.mean()), float(y.std()), found.noise, found.factors
    )
    assert "Unexplained: " in headline(report)
