"""One record read per recipe: the replicates' records derived from it and used only where they
hash to the runs' own tags; a run whose record differs in a field no tag names is read for
itself, never merged. Real records (``support.records``) in local artifact roots, no store."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from mlflow_fingerprint import layout
from mlflow_fingerprint.compare.resolve import parse_record
from mlflow_fingerprint.explain import experiment as explain_reads
from mlflow_fingerprint.explain import replicas
from mlflow_fingerprint.model.fields import GIT_DIRTY, PROGRAM_CALL
from mlflow_fingerprint.model.hashing import EXCLUDED, digest, group_payload
from mlflow_fingerprint.tracking import experiment as reads
from mlflow_fingerprint.tracking.progress import Progress
from mlflow_fingerprint.tracking.tags import fingerprint_tags
from support.records import cpu_record, edit, seeded


def stored(tmp: Path, run_id: str, record: dict[str, Any], **tags: str) -> reads.StoredRun:
    """A run with ``record`` as its artifact and the tags the run wrapper writes for it
    (``tags``: some said otherwise)."""
    root = tmp / run_id / "artifacts"
    (root / "fingerprint").mkdir(parents=True)
    (root / layout.FINGERPRINT_ARTIFACT).write_text(json.dumps(record))
    written = {**fingerprint_tags(record, set()), **tags}
    return reads.StoredRun(
        run_id, None, "FINISHED", "1", str(root), MappingProxyType({"lr": "0.1"}),
        MappingProxyType(written), MappingProxyType({}), MappingProxyType({}),
    )  # fmt: skip


@pytest.fixture(scope="module")
def recipe() -> dict[str, Any]:
    return edit(cpu_record(), **{"program.call.lr": 0.1, "program.call.data_seed": 0})


def test_replicates_are_derived_from_one_read_and_equal_their_own_records(
    tmp_path: Path, recipe, monkeypatch
) -> None:
    read: list[str] = []
    real = reads._read_local
    monkeypatch.setattr(
        reads, "_read_local", lambda root, path: read.append(root.parent.name) or real(root, path)
    )
    records = {f"s{s}": seeded(edit(recipe, **{"program.call.data_seed": s}), s) for s in range(4)}
    runs = [stored(tmp_path, name, record) for name, record in records.items()]
    got = explain_reads._read([runs], "sqlite:///unused.db", None, Progress(False), len(runs))
    assert read == ["s0"]  # one read for the recipe
    assert got.partial == {}
    assert len(got.records) == len(records)
    for i, name in enumerate(records):
        assert got.records.covered(i) == "full"
        own, _ = parse_record(json.dumps(records[name]), name, frozen=False)
        assert got.records[i] == {**own, "params": {"lr": "0.1"}}
    assert sum(got.records.derived) == 3  # the base's replicates
    # runs that logged the same params share one mapping of them, base and replicates alike
    assert len({id(record["params"]) for record in got.records}) == 1
    assert len(got.records.shared) == 1


@pytest.mark.parametrize("size", [4, 2, 1])
def test_the_rows_go_as_their_records_are_made_and_the_records_keep_the_runs_order(
    tmp_path: Path, recipe, monkeypatch, size: int
) -> None:
    """``_read`` empties the pages it is given (a history's rows and records are never all held
    at once); its records come in the runs' order, a run read for itself (``odd``: a field no
    tag names differs) in its place among the derived ones. A base lends to the pages after
    its own: the recipe is read once however the runs are paged."""
    read: list[str] = []
    real = reads._read_local
    monkeypatch.setattr(
        reads, "_read_local", lambda root, path: read.append(root.parent.name) or real(root, path)
    )
    odd = seeded(edit(recipe, **{"program.call.data_seed": 7}), 5)
    records = {"s0": seeded(recipe, 2), "s1": seeded(recipe, 0), "odd": odd}
    records["s3"] = seeded(recipe, 1)
    runs = [stored(tmp_path, name, record) for name, record in records.items()]
    pages = [runs[i : i + size] for i in range(0, len(runs), size)]
    total = None if size == len(runs) else len(runs)
    got = explain_reads._read(pages, "sqlite:///unused.db", None, Progress(False), total)
    assert pages == [[]] * len(pages)
    assert sorted(read) == ["odd", "s0"]
    assert [record["seeds"]["requested"] for record in got.records] == [2, 0, 5, 1]
    assert got.records[2]["program"]["call"]["data_seed"] == 7
    assert list(got.records.derived) == [0, 1, 0, 1]


def test_a_run_apart_in_a_field_no_tag_names_is_read_not_merged(
    tmp_path: Path, recipe, monkeypatch
) -> None:
    """``b`` and ``c`` carry ``a``'s group tags (env, numerics, replicate, schema): ``b``'s
    ``data_seed`` is not its seed (no tag holds it), and ``c``'s replicate tag is stale (its
    weight decay differs). Merged with ``a``, each would report ``a``'s value."""
    read: list[str] = []
    real = reads._read_local
    monkeypatch.setattr(
        reads, "_read_local", lambda root, path: read.append(root.parent.name) or real(root, path)
    )
    a = seeded(recipe, 0)
    b = seeded(edit(recipe, **{"program.call.data_seed": 7}), 1)
    c = seeded(edit(recipe, **{"program.call.weight_decay": 0.01}), 2)
    stale = {layout.TAG_HASH_REPLICATE: a["hashes"]["replicate"]}
    runs = [
        stored(tmp_path, "a", a),
        stored(tmp_path, "b", b),
        stored(tmp_path, "c", c, **stale),
    ]
    assert len({replicas.group_key(run) for run in runs}) == 1  # one recipe's, by their tags
    found = explain_reads._read([runs], "sqlite:///unused.db", None, Progress(False), len(runs))
    assert sorted(read) == ["a", "b", "c"]
    got = dict(zip("abc", found.records, strict=True))
    assert got["b"]["program"]["call"]["data_seed"] == 7
    assert got["c"]["program"]["call"]["weight_decay"] == 0.01
    assert got["b"]["seeds"]["requested"] == 1


def test_a_base_whose_record_does_not_hash_to_its_tags_lends_nothing(recipe) -> None:
    record = seeded(recipe, 0)
    tags = fingerprint_tags(record, set())
    assert replicas.sound_base(record, tags)
    edited = {**record, "torch": {**record["torch"], "version": "9.9.9"}}
    assert not replicas.sound_base(edited, tags)


def test_a_base_writes_the_recipe_payload_the_hash_does(recipe, monkeypatch) -> None:
    """``Base.recipe_hash`` writes the recipe's payload field by field; it must be
    ``group_payload``'s, with the frameworks the program imported and without the fields the
    group leaves to another (``EXCLUDED``), or a derived record would be checked against another
    hash than its own."""
    monkeypatch.setitem(EXCLUDED, "recipe", (PROGRAM_CALL.child("lr"), GIT_DIRTY))
    keras = {"imported": True, "global_seed": 3}
    for record in (seeded(recipe, 3), seeded(edit(recipe, keras=keras), 3)):
        base = replicas.lender(record, fingerprint_tags(record, set()))
        assert base is not None
        for other in (record, seeded(record, 4)):  # the base's own objects, then new ones
            assert base.recipe_hash(other) == digest(group_payload(other, "recipe"))
        assert group_payload(record, "recipe")["program"]["call"] == {"data_seed": 0}


def test_a_reseeded_record_reads_as_the_copy_it_stands_for(recipe) -> None:
    """``Reseeded`` holds the base, the seeds and the run's params: read key by key, it is the
    base with the new seed in every field that holds one, and the base's own object elsewhere;
    a base without ``data`` reads as one whose ``data`` is null, as a copy was."""
    base = seeded(recipe, 3)
    record = replicas.Reseeded(base, 3, 4, {"lr": "0.2"}, ("r" * 16, "f" * 16))
    assert dict(record) == {
        **seeded(recipe, 4),
        "params": {"lr": "0.2"},
        "hashes": {**base["hashes"], "recipe": "r" * 16, "fingerprint": "f" * 16},
    }
    assert len(record) == len(base) + 1
    assert "params" in record
    assert record["gpu"] is base["gpu"]
    assert record["seeds"] == record["seeds"]
    assert record["seeds"] is not base["seeds"]
    bare = {k: v for k, v in base.items() if k != "data"}
    assert replicas.Reseeded(bare, 3, 4)["data"] is None
    assert "data" not in replicas.Reseeded(bare, 3, 3)


@pytest.mark.parametrize(
    "hashes",
    [
        ("0123456789abcdef", "fedcba9876543210"),  # two digests: held as their 16 bytes
        ("00000000000000ff", "ff00000000000000"),
        ("0123456789ABCDEF", "fedcba9876543210"),  # any other pair: held as it is
        ("0123456789abcde", "fedcba9876543210f"),
        ("", "fedcba9876543210"),
    ],
)
def test_a_reseeded_record_gives_back_the_hashes_it_was_given(recipe, hashes) -> None:
    """The run's hashes come back exactly, however ``Reseeded`` holds them."""
    record = replicas.Reseeded(seeded(recipe, 3), 3, 4, None, hashes)
    assert (record["hashes"]["recipe"], record["hashes"]["fingerprint"]) == hashes


def plain(value: Any) -> Any:
    """``value`` as dicts and lists, every mapping read key by key."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def test_a_walked_replicate_reads_as_its_record_and_shares_what_no_seed_is_in(recipe) -> None:
    """What the walk that finds the fields that vary reads of a replicate (``Reseeded.walked``)
    is its record, key for key, with the seed as an integer (seeds, a call argument, a loader's
    generator, Keras, a list) and as an option's text; the sections and parts no seed is in
    are the base's own objects, and a section that holds the seed is an overlay, not a copy."""
    loader = {"batch_size": 8, "generator": {"initial_seed": 3, "kind": "torch"}}
    base = seeded(
        edit(
            recipe,
            keras={"imported": True, "global_seed": 3},
            **{
                "program.options": {"seed": "3", "lr": "0.1"},
                "seeds.workers": [3, 5],
                "program.call.data_seed": 3,
                "program.entry": {"file": "train.py", "line": 3},
                "data.loaders": [loader, {"batch_size": 3}],
            },
        ),
        3,
    )
    lent = replicas.lender(base, fingerprint_tags(base, set()))
    assert lent is not None
    assert set(lent.at) == {"seeds", "program", "data", "keras"}
    record = replicas.Reseeded(base, 3, 4, {"lr": "0.2"}, None, lent.at)
    walked = record.walked()
    assert plain(walked) == plain(record)
    assert list(walked) == list(record)
    assert walked["program"]["options"] == {"seed": "4", "lr": "0.1"}
    assert walked["seeds"]["workers"] == [4, 5]
    assert walked["program"]["call"]["data_seed"] == 4
    assert walked["program"]["entry"] == {"file": "train.py", "line": 3}  # 3 is not its seed
    assert walked["data"]["loaders"][0]["generator"]["initial_seed"] == 4
    assert walked["data"]["loaders"][1] is base["data"]["loaders"][1]
    assert isinstance(walked["program"], replicas.Overlay)
    assert walked["program"]["entry"] is base["program"]["entry"]
    assert walked["seeds"]["state_digests"] is base["seeds"]["state_digests"]
    assert walked["gpu"] is base["gpu"]
    # the base's own seed, or no places known: the record itself
    assert replicas.Reseeded(base, 3, 3, at=lent.at).walked()["program"] is base["program"]
    assert isinstance(replicas.Reseeded(base, 3, 4).walked()["program"], dict)


def test_a_swap_builds_only_where_a_seed_is() -> None:
    """Sections a seed leaves alone are the base's own objects, so a walk over replicates passes
    over them once; a swapped section shares every part the seed is not in."""
    digests = {"python": "b3b2", "torch": "0380"}
    seeds = {"requested": 3, "state_digests": digests, "origin": "program", "flag": True}
    assert replicas._swapped(seeds, 5, 6) is seeds
    swapped = replicas._swapped(seeds, 3, 4)
    assert swapped == {**seeds, "requested": 4}
    assert swapped["state_digests"] is digests
    options = {"seed": "3", "lr": "0.1"}
    assert replicas._named(options, 5, 6) is options
    assert replicas._named(options, 3, 4) == {"seed": "4", "lr": "0.1"}
