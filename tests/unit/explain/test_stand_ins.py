"""The walk of the runs' records through stand-ins (``explain/stand_ins.py``) finds the fields and
values the walk of every record finds, reading a few records per recipe. Real captured records
(``support.records``) with the seed in every kind of place a replicate's record holds it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlflow_fingerprint.compare.fields import varying
from mlflow_fingerprint.explain import replicas, stand_ins
from mlflow_fingerprint.explain.table import NOT_RECORDED, text
from mlflow_fingerprint.tracking.tags import fingerprint_tags
from support.records import cpu_record, edit, rehash, seeded


def base_record(lr: float, seed: int) -> dict[str, Any]:
    """A recipe's record with its seed as an integer (seeds, a call argument, a loader's
    generator, Keras, a list) and as an option's text."""
    loader = {"batch_size": 8, "generator": {"initial_seed": seed, "kind": "torch"}}
    record = edit(
        cpu_record(),
        keras={"imported": True, "global_seed": seed},
        **{
            "program.call.lr": lr,
            "program.options": {"seed": str(seed), "lr": str(lr)},
            "seeds.workers": [seed, 5],
            "program.call.data_seed": seed,
            "data.loaders": [loader, {"batch_size": 3}],
        },
    )
    return {**seeded(record, seed), "params": {"lr": str(lr)}}


@pytest.fixture(scope="module")
def bases() -> list[tuple[dict[str, Any], replicas.Base]]:
    """Three recipes; the third has no ``data`` or ``keras`` section (its replicates of another
    seed read ``data`` as None, as a copy of its record would)."""
    out = []
    bare = rehash({k: v for k, v in base_record(0.5, 2).items() if k not in ("data", "keras")})
    for record in (base_record(0.1, 3), base_record(0.2, 7), bare):
        lent = replicas.lender(record, fingerprint_tags(record, set()))
        assert lent is not None
        assert lent.at
        out.append((record, lent))
    return out


def replicate(base: tuple[dict[str, Any], replicas.Base], seed: int) -> replicas.Reseeded:
    record, lent = base
    old = record["seeds"]["requested"]
    return replicas.Reseeded(record, old, seed, {"seed": str(seed)}, None, lent.at)


def walked(record: Mapping[str, Any]) -> Mapping[str, Any]:
    return record.walked() if isinstance(record, replicas.Reseeded) else record


def as_read(found: Sequence[tuple[str, list[Any]]]) -> list[tuple[str, list[tuple[type, str]]]]:
    """Each field with each run's value there, as the table reads it: its type and its text."""
    return [(path, [(type(v), text(v)) for v in values]) for path, values in found]


def every_record(records: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Any]]]:
    return list(varying([walked(r) for r in records], leave_out=NOT_RECORDED))


def test_a_history_of_replicates_gives_the_fields_and_values_of_every_record(bases) -> None:
    """Two recipes, each with its base, a replicate of the base's own seed, one seed twice and
    seven others; a record read for itself (another learning rate); a third recipe whose base is
    not among the runs. The same fields, in the same order, with the same value in each run."""
    first, second, _ = bases
    lone = base_record(0.3, 11)
    records: list[Mapping[str, Any]] = [first[0], replicate(first, 3), second[0]]
    records += [replicate(first, s) for s in (4, 4, 5, 6, 7, 8, 9, 10)]
    records += [lone, *(replicate(second, s) for s in (1, 2, 7, 9, 12))]
    absent = base_record(0.4, 0)
    lent = replicas.lender(absent, fingerprint_tags(absent, set()))
    assert lent is not None
    records += [replicate((absent, lent), s) for s in (20, 21, 22)]
    found = list(stand_ins.varying_records(records, NOT_RECORDED))
    assert as_read(found) == as_read(every_record(records))
    paths = [path for path, _ in found]
    for path in ("seeds.requested", "program.options.seed", "seeds.workers", "keras.global_seed"):
        assert path in paths
    assert "program.call.lr" in paths
    workers = dict(found)["seeds.workers"]
    assert workers[3:5] == [[4, 5], [4, 5]]


def test_the_walk_reads_two_seeds_of_a_recipe_whatever_its_runs(bases, monkeypatch) -> None:
    """Fifty replicates of each recipe: the walk reads each base and two replicates of each, and
    still gives each run its own seed."""
    read: list[int] = []
    walk = stand_ins.varying

    def counted(records: Sequence[Any], **kwargs: Any) -> Any:
        read.append(len(records))
        return walk(records, **kwargs)

    monkeypatch.setattr(stand_ins, "varying", counted)
    records: list[Mapping[str, Any]] = [record for record, _ in bases]
    records += [replicate(base, s) for s in range(100, 150) for base in bases]
    found = dict(stand_ins.varying_records(records, NOT_RECORDED))
    assert read == [3 * len(bases)]
    assert found["seeds.requested"][len(bases) :] == [s for s in range(100, 150) for _ in bases]
    assert found["program.options.seed"][-1] == "149"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([None, 0, 1, 2]), st.integers(0, 12)), min_size=2, max_size=14
    )
)
def test_any_mix_of_runs_gives_what_the_walk_of_every_record_gives(bases, runs) -> None:
    """Runs in any order: a base itself (None), or a replicate of a recipe with any seed (the
    base's own among them, seeds repeated, a recipe's base absent)."""
    records: list[Mapping[str, Any]] = []
    for recipe, seed in runs:
        if recipe is None:
            records.append(bases[seed % 3][0])
        else:
            records.append(replicate(bases[recipe], seed))
    found = list(stand_ins.varying_records(records, NOT_RECORDED))
    assert as_read(found) == as_read(every_record(records))
