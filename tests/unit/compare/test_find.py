"""``find`` (``compare/find.py``): the runs of a real sqlite store whose hash matches a run's,
found by the store's own tag search, in every experiment or in one."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from mlflow_fingerprint import layout
from mlflow_fingerprint.compare.find import HASH_KEYS, all_experiment_ids, find, hash_of
from mlflow_fingerprint.errors import ResolveError
from support.records import cpu_record, log_run, seeded


def test_the_hash_is_read_from_the_run_s_tag_else_from_its_record() -> None:
    record = cpu_record()
    assert hash_of({}, record, "env") == record["hashes"]["env"]
    assert hash_of({layout.HASH_TAGS["env"]: "tagged"}, record, "env") == "tagged"
    assert hash_of({}, {"hashes": "broken"}, "all") is None
    assert set(HASH_KEYS) == {"all", "env", "numerics", "recipe"}


def test_runs_with_the_same_hash_are_found_in_every_experiment_but_the_run_itself(
    sqlite_tracking_uri: str,
) -> None:
    same = seeded(cpu_record(), 0)
    a = log_run(sqlite_tracking_uri, "one", "a", same, {})
    twin = log_run(sqlite_tracking_uri, "two", "twin", same, {})
    other_seed = log_run(sqlite_tracking_uri, "two", "b", seeded(cpu_record(), 1), {})
    found = find(a)
    assert found.same == "all"
    assert found.hash == same["hashes"]["fingerprint"]
    assert [m.run_id for m in found.matches] == [twin]
    match = found.matches[0]
    assert (match.run_name, match.seed) == ("twin", "0")
    assert match.started is not None
    assert match.started.endswith("+00:00")
    assert found.to_dict()["matches"][0]["run_id"] == twin
    # the environment is the same whatever the seed: the other seed's run matches on env
    env = find(a, same="env")
    assert env.tag == layout.HASH_TAGS["env"]
    assert {m.run_id for m in env.matches} == {twin, other_seed}
    assert [m.run_id for m in find(a, same="env", experiment="one").matches] == []
    assert len(find(a, same="env", max_results=1).matches) == 1
    ids = all_experiment_ids(MlflowClient(sqlite_tracking_uri))
    assert len(ids) == 3  # Default, one, two


def test_a_wrong_choice_or_a_reference_without_a_hash_is_refused(sqlite_tracking_uri: str) -> None:
    with pytest.raises(ValueError, match="same must be one of all, env, numerics, recipe"):
        find(cpu_record(), same="code")
    unhashed = cpu_record()
    del unhashed["hashes"]
    with pytest.raises(ResolveError, match="has no env hash to search for"):
        find(unhashed, same="env")
