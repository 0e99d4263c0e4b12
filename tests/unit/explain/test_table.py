"""The table ``explain`` analyses (``explain/table.py``), built from real captured records: which
varying fields it uses, which are seeds, which some runs cannot know, and what it leaves out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mlflow_fingerprint.explain.records import Records
from mlflow_fingerprint.explain.table import ABSENT, Table, build, text
from mlflow_fingerprint.model.missing import MISSING
from mlflow_fingerprint.model.vocabulary import Coverage
from support.blocks import texts_in
from support.records import cpu_record, edit, seeded

Row = tuple[Coverage, Mapping[str, Any]]


def run(record: dict[str, Any], lr: str) -> Row:
    return "full", {**record, "params": {"lr": lr}}


def built(rows: Sequence[Row]) -> Table:
    """The table of runs with these records (each with its params), held as ``_read`` holds
    them."""
    records = Records()
    for coverage, record in rows:
        records.add(coverage, record, record["params"])
    assert list(records) == [dict(record) for _, record in rows]  # each made again, equal
    return build(records)


def two_runs() -> list[Row]:
    """Two whole records apart in their learning rate, their seeds and their (volatile) host."""
    base = edit(cpu_record(), **{"program.call.lr": 0.1, "platform.hostname": "node-a"})
    other = edit(base, **{"program.call.lr": 0.2, "platform.hostname": "node-b"})
    return [run(seeded(base, 0), "0.1"), run(seeded(other, 1), "0.2")]


def test_a_varying_field_is_used_a_seed_is_set_apart_and_the_host_left_out() -> None:
    table = built(two_runs())
    assert [f.path for f in table.fields] == ["program.call.lr", "params.lr"]
    assert {f.effect for f in table.fields} == {"recipe"}
    assert texts_in(table.columns["program.call.lr"]) == ("0.1", "0.2")
    assert table.seeds == ("seeds.requested", "seeds.torch_initial_seed")
    assert table.missing == ()
    assert "platform.hostname" not in table.columns
    assert table.keys[0] != table.keys[1]


def test_a_field_a_params_only_run_cannot_know_is_missing_not_guessed() -> None:
    rows = [*two_runs(), ("params", {"params": {"lr": "0.2"}})]
    table = built(rows)
    assert [f.path for f in table.fields] == ["params.lr"]
    assert texts_in(table.columns["params.lr"]) == ("0.1", "0.2", "0.2")
    assert table.columns["params.lr"].codes.tolist() == [0, 1, 1]
    assert table.missing == ("program.call.lr",)
    assert "program.call.lr" not in table.columns


def test_values_are_compared_as_text() -> None:
    assert (text("0.1"), text(0.1), text(MISSING)) == ("0.1", "0.1", ABSENT)
    assert text({"b": 1, "a": 2}) == '{"a": 2, "b": 1}'


def test_replicates_walked_through_their_overlays_give_the_table_of_their_copies() -> None:
    """Replicates derived from one read record (``replicas.Reseeded``, walked through overlays
    of their seeded sections) and the plain copies they stand for make the same table."""
    from mlflow_fingerprint.explain import replicas
    from mlflow_fingerprint.tracking.tags import fingerprint_tags

    bases = []
    for lr in (0.1, 0.2):
        record = edit(cpu_record(), **{"program.call.lr": lr, "program.options.seed": "0"})
        bases.append(seeded(record, 0))
    derived, copies = [], []
    for base in bases:
        lent = replicas.lender(base, fingerprint_tags(base, set()))
        assert lent is not None
        assert lent.at
        for seed in range(4):
            params = {"lr": str(base["program"]["call"]["lr"]), "seed": str(seed)}
            record = replicas.Reseeded(base, 0, seed, params, None, lent.at)
            derived.append(("full", record))
            copies.append(("full", dict(record)))
    walked, copied = built(derived), built(copies)
    assert (walked.fields, walked.seeds, walked.missing) == (
        copied.fields,
        copied.seeds,
        copied.missing,
    )
    assert walked.keys == copied.keys
    assert walked.columns.keys() == copied.columns.keys()
    for path, col in walked.columns.items():
        assert col.labels == copied.columns[path].labels
        assert np.array_equal(col.codes, copied.columns[path].codes)
    assert "program.options.seed" in walked.seeds
    assert "seeds.requested" not in walked.columns  # a seed is named, never a column
    assert len(set(walked.keys)) == 2  # each learning rate's four seeds are replicates
