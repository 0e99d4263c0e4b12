"""Which runs are replicates of a pair and what seed each trained from
(``compare/replicates.py``), on real captured records."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.compare.replicates import record_key, run_seed, tag_seed
from support.records import cpu_record, edit, seeded


@pytest.mark.parametrize(
    ("text", "seed"),
    [
        ("0", 0),
        ("7 (set by the program)", 7),
        ("1 (TensorFlow global seed)", 1),
        ("none", None),
        ("7 (by someone)", None),
        (None, None),
    ],
)
def test_the_seed_a_tag_names(text: str | None, seed: int | None) -> None:
    assert tag_seed(text) == seed


def test_runs_apart_only_in_their_seed_share_a_replicate_key() -> None:
    base = seeded(cpu_record(), 0)
    other_seed, other_lr = seeded(base, 5), edit(base, **{"program.call.lr": 0.5})
    assert record_key(base) == record_key(other_seed) != record_key(other_lr)
    stale = {**base, "hashes": {}}  # a record made before the replicate hash existed
    assert record_key(stale) == base["hashes"]["replicate"]


def test_the_seed_a_run_trained_from() -> None:
    assert run_seed(seeded(cpu_record(), 3)) == 3
    assert run_seed(cpu_record()) is None
