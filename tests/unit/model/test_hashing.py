"""The record's hashes: stable, each moved by its own group, ``replicate`` blind to seeds."""

from __future__ import annotations

from mlflow_fingerprint.model.hashing import (
    canonical_json,
    compute_hashes,
    digest,
    is_seed_name,
)
from support.records import cpu_record


def test_canonical_json_ignores_key_order_and_whitespace() -> None:
    assert canonical_json({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'
    assert digest({"b": 1, "a": 2}) == digest({"a": 2, "b": 1})
    assert len(digest("x")) == 16


def test_hashes_are_stable_and_each_group_moves_alone() -> None:
    record = cpu_record()
    hashes = compute_hashes(record)
    assert compute_hashes(cpu_record()) == hashes
    changed = cpu_record()
    changed["git"]["commit"] = "0" * 40
    moved = compute_hashes(changed)
    assert moved["recipe"] != hashes["recipe"]
    assert moved["fingerprint"] != hashes["fingerprint"]
    assert (moved["env"], moved["numerics"]) == (hashes["env"], hashes["numerics"])


def test_a_seed_moves_the_recipe_but_not_the_replicate_hash() -> None:
    hashes = compute_hashes(cpu_record())
    reseeded = cpu_record()
    reseeded["seeds"]["torch_initial_seed"] = 7
    moved = compute_hashes(reseeded)
    assert moved["recipe"] != hashes["recipe"]
    assert moved["replicate"] == hashes["replicate"]


def test_volatile_fields_enter_no_hash() -> None:
    record = cpu_record()
    record["captured_at"] = "2000-01-01T00:00:00Z"
    assert compute_hashes(record) == compute_hashes(cpu_record())


def test_seed_names() -> None:
    assert is_seed_name("seed")
    assert is_seed_name("data_seed")
    assert is_seed_name("model.Seed")
    assert not is_seed_name("seeds_used")
    assert not is_seed_name("reseeding")
