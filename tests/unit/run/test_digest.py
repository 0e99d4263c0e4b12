"""The exact digest and norm of a tensor (``run/digest.py``) on the edges the watch's system
tests do not reach: tensors whose bytes are no whole number of words, empty ones, integer and
boolean ones, and a digest that spans several rows. Flipped bits and thread counts are tested in
``tests/system/test_watch.py``."""

from __future__ import annotations

import pytest
import torch

from mlflow_fingerprint.run.digest import PRIME, ROW, Weights, _row_weight, reduce

WEIGHTS = Weights()  # built once: 2 x 65536 weights


def digest(t: torch.Tensor) -> str:
    return reduce(t, WEIGHTS).value()[0]


def test_the_word_weights_are_odd_and_the_row_weights_inside_the_prime() -> None:
    w = Weights().on(torch.device("cpu"))
    assert w.shape == (2, ROW)
    assert w.dtype == torch.int32
    assert bool((w % 2 != 0).all())
    assert all(1 <= _row_weight(k, row) < PRIME for k in (0, 1) for row in (0, 1, 10**6))


def test_a_tail_of_one_to_three_bytes_counts() -> None:
    base = torch.zeros(7, dtype=torch.uint8)  # one word and three bytes
    seen = {digest(base)}
    for i in range(7):
        changed = base.clone()
        changed[i] = 1
        seen.add(digest(changed))
    assert len(seen) == 8  # every byte, in the words and in the tail, moves the digest


def test_a_digest_spans_rows_and_sees_a_change_in_each() -> None:
    x = torch.zeros(ROW * 2 + 5, dtype=torch.float32)
    pending = reduce(x, WEIGHTS)
    assert tuple(pending.sums.shape) == (3, 2)  # two whole rows and the tail
    for i in (0, ROW + 1, 2 * ROW + 4):
        y = x.clone()
        y[i] = 1.0
        assert digest(y) != digest(x)


@pytest.mark.parametrize(
    "tensor",
    [
        torch.tensor([True, False, True]),
        torch.arange(6, dtype=torch.int64).reshape(2, 3),
        torch.tensor([1 + 2j], dtype=torch.complex64),
        torch.ones(3, dtype=torch.bfloat16),
        torch.zeros(0),
    ],
    ids=["bool", "int64", "complex", "bfloat16", "empty"],
)
def test_every_dtype_has_a_digest_a_norm_and_its_own_name_and_shape(tensor) -> None:
    pending = reduce(tensor, WEIGHTS)
    value, norm = pending.value()
    assert len(value) == 32
    assert norm == pytest.approx(float(torch.linalg.vector_norm(tensor.to(torch.complex64))))
    assert pending.dtype == str(tensor.dtype).removeprefix("torch.")
    assert pending.shape == tuple(tensor.shape)
