"""Blocks of fields that moved together (``explain/design.py``): the same partition, a nested
field, three aliased flags, an xor, and near aliasing by Cramer's V."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from mlflow_fingerprint.explain import design
from mlflow_fingerprint.explain.design import (
    Block,
    alike,
    cramers_v,
    first_seen,
    rank,
    treatment,
)
from support.blocks import design_blocks, texts_of


def test_fields_with_the_same_partition_are_one_block_of_two_settings() -> None:
    gpu = ["A100", "A100", "H100", "H100"] * 3
    torch = ["2.5", "2.5", "2.7", "2.7"] * 3
    found = design_blocks(texts_of(gpu=gpu, torch=torch, seedless=[0, 1] * 6))
    assert [b.fields for b in found] == [("gpu", "torch"), ("seedless",)]
    assert found[0].confounded
    assert found[0].labels == ("gpu=A100, torch=2.5", "gpu=H100, torch=2.7")


def test_a_block_names_each_combination_of_its_settings_in_the_order_the_runs_show_it() -> None:
    """Codes and labels as each run's own label would give them: a combination first seen late
    is numbered late, and a run's code names its values."""
    driver = ["550", "535", "550", "560", "535", "560"] * 2
    arch = ["hopper", "ampere", "hopper", "hopper", "ampere", "hopper"] * 2
    (block,) = design_blocks(texts_of(driver=driver, arch=arch))
    own = [f"driver={d}, arch={a}" for d, a in zip(driver, arch, strict=True)]
    assert block.labels == tuple(dict.fromkeys(own))
    assert [block.labels[c] for c in block.codes] == own
    assert block.labels[2] == "driver=560, arch=hopper"


def test_rows_are_numbered_in_order_of_first_appearance() -> None:
    codes, firsts = first_seen(np.array([[1, 2], [0, 0], [1, 2], [0, 1], [0, 0]]))
    assert codes.tolist() == [0, 1, 0, 2, 1]
    assert firsts.tolist() == [0, 1, 3]


VECTORS = [[0, 1, 1], [0, 1, 0], [0, 1, 1], [1, 0, 0], [0, 1, 0], [0, 1, 1]]


@pytest.mark.parametrize("collide", [False, True])
def test_equal_vectors_are_grouped_in_order_of_the_first(monkeypatch, collide) -> None:
    """Grouped by value, never by digest alone: where every digest is one (a collision
    forced), vectors that differ are still apart."""
    if collide:

        class Same:
            def __init__(self, data: object) -> None:
                pass

            def digest(self) -> bytes:
                return b"same"

        monkeypatch.setattr(design, "hashlib", SimpleNamespace(sha256=Same))
    vectors = (np.array(v, dtype=np.int64) for v in VECTORS)
    assert alike(vectors) == [[0, 2, 5], [1, 4], [3]]


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


def test_the_rank_from_the_distinct_codes_is_the_whole_design_s() -> None:
    """``rank`` reads the blocks' distinct code rows, never the whole dummy-coded design: the
    same rank as the design of every run, where blocks are nested, aliased or independent."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, 500)
    b = rng.integers(0, 3, 500)
    parts = [
        Block(("a",), ("a",), a, tuple("0123")),
        Block(("b",), ("b",), b, tuple("012")),
        Block(("a2",), ("a2",), a // 2, tuple("01")),  # nested in a
        Block(("ab",), ("ab",), (a + b) % 2, tuple("01")),  # of both, not in their span
        Block(("one",), ("one",), np.zeros(500, dtype=np.int64), ("x",)),
    ]
    for chosen in ([], parts[:1], parts[:2], parts[:3], parts[1:4], parts):
        whole = np.column_stack([np.ones(500), *(treatment(p.codes, p.levels) for p in chosen)])
        assert rank(chosen) == np.linalg.matrix_rank(whole)
    assert rank(parts) == 1 + 3 + 2 + 1  # a2 adds nothing to a; ab one more; "one" nothing
