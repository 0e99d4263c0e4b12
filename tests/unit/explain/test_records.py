"""How ``explain`` holds the runs' records until the table is made (``explain/records.py``): each
record read back is equal to the one added, whatever its kind, and a replicate costs a few dozen
bytes, not a record object."""

from __future__ import annotations

from typing import Any

import pytest

from mlflow_fingerprint.explain import replicas
from mlflow_fingerprint.explain.records import Records
from mlflow_fingerprint.tracking.tags import fingerprint_tags
from support.memory import held_alone
from support.records import cpu_record, edit, seeded


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    record = edit(cpu_record(), **{"program.call.lr": 0.1, "program.options.seed": "0"})
    return {**seeded(record, 0), "params": {"lr": "0.1"}}


def lent(base: dict[str, Any]) -> replicas.Base:
    found = replicas.lender(base, fingerprint_tags(base, set()))
    assert found is not None
    return found


def test_each_kind_of_record_comes_back_equal_and_in_order(base) -> None:
    at = lent(base).at
    params = {"lr": "0.1"}
    digests = ("0123456789abcdef", "fedcba9876543210")
    added = [
        ("full", {k: v for k, v in base.items() if k != "params"}, params),  # read for itself
        ("full", replicas.Reseeded(base, 0, 3, params, digests, at), params),
        ("full", replicas.Reseeded(base, 0, 4, params, ("short", "UPPER"), at), params),
        ("full", replicas.Reseeded(base, 0, 5, None, None, at), params),  # the base's params
        ("tags", {"torch": {"version": "2.13.0"}}, {"lr": "0.2"}),
        ("params", None, {"lr": "0.3"}),
    ]
    records = Records()
    for coverage, record, logged in added:
        records.add(coverage, record, logged)
    assert len(records) == len(added)
    assert [records.covered(i) for i in range(len(added))] == [c for c, _, _ in added]
    expected = [
        {**added[0][1], "params": params},
        *(dict(record) for _, record, _ in added[1:4]),
        {"torch": {"version": "2.13.0"}, "params": {"lr": "0.2"}},
        {"params": {"lr": "0.3"}},
    ]
    assert [dict(r) for r in records] == expected
    assert [records.params_of(i) for i in range(len(added))] == [
        params, params, params, {"lr": "0.1"}, {"lr": "0.2"}, {"lr": "0.3"}
    ]  # fmt: skip
    made = records[1]
    assert isinstance(made, replicas.Reseeded)
    assert (made.seed, made.params, made.held_hashes) == (
        3,
        params,
        bytes.fromhex("".join(digests)),
    )
    assert records[2]["hashes"]["recipe"] == "short"  # a pair that is no digest, as given
    assert records[1] is not records[1]  # made as it is read
    assert list(records.picked([5, 1])) == [expected[5], expected[1]]
    assert records.picked(range(len(added))) is records
    some = records.subset([2, 4, 1])  # the runs a report uses, of those a search gave
    assert [dict(r) for r in some] == [expected[2], expected[4], expected[1]]
    assert [some.covered(i) for i in range(3)] == ["full", "tags", "full"]
    assert some[0]["hashes"]["recipe"] == "short"  # its odd hashes follow it


def test_the_runs_share_their_params_bases_and_read_records(base) -> None:
    at = lent(base).at
    read = {k: v for k, v in base.items() if k != "params"}
    sets = [{"lr": "0.1"}, {"lr": "0.2"}]
    records = Records()
    for i in range(40):
        logged = sets[i % 2]
        records.add("full", replicas.Reseeded(base, 0, i, logged, None, at), logged)
        records.add("full", read, logged)
    assert len(records.shared) == 2
    assert len(records.sources) == 2  # the base (as its replicates hold it) and the read record
    assert [records[i]["params"] for i in range(4)] == [sets[0], sets[0], sets[1], sets[1]]
    assert records[0]["params"] is records[1]["params"]


def test_a_replicate_costs_a_few_dozen_bytes(base) -> None:
    """A ``Reseeded`` and its two hashes each, with the ``RunRecord`` that held them, were about
    240 bytes a run: 23 MiB of a 100,000-run history."""
    at = lent(base).at
    params = {"lr": "0.1"}
    runs = 20_000
    replicates = (
        replicas.Reseeded(base, 0, seed, params, (f"{seed:016x}", f"{seed + 1:016x}"), at)
        for seed in range(runs)
    )
    records = Records()
    with held_alone() as held:
        for record in replicates:
            records.add("full", record, params)
    assert held.bytes / runs < 60, held.bytes / runs
    assert records[runs - 1].seed == runs - 1
    assert records[runs - 1]["hashes"]["recipe"] == f"{runs - 1:016x}"
