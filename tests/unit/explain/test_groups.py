"""Replicates, the noise floor and outliers (``explain/groups.py``): which fields hold a seed,
which runs are replicates, the within-group spread and the odd run of a group."""

from __future__ import annotations

import numpy as np
import pytest

from mlflow_fingerprint.explain.groups import (
    Groups,
    is_seed_field,
    noise_floor,
    outliers,
    replicate_key,
)


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
