"""Each field a run shows or the comparator names is declared once (model/declarations.py), and
the run's tags, the record ``diff`` rebuilds from them and the rules' effects all come from there.

Everything here is derived from the declarations, so a field added to the table is checked by
these tests without editing them or any fixture.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import pytest

from mlflow_fingerprint import layout
from mlflow_fingerprint.compare.citations import HASH_GROUP
from mlflow_fingerprint.compare.partial import record_from_tags, summary_record
from mlflow_fingerprint.compare.rules import RULES, _collect, declared_rule, rule_for
from mlflow_fingerprint.compare.rules.base import Rule
from mlflow_fingerprint.model.declarations import BY_PATH, FIELDS, TAGGED, Declared
from mlflow_fingerprint.model.fingerprint import get_path
from mlflow_fingerprint.tracking.tags import fingerprint_tags
from support.paths import FIXTURES


def cpu_record() -> dict[str, Any]:
    return json.loads((FIXTURES / "fingerprints" / "cpu.json").read_text())


def tensorflow_record() -> dict[str, Any]:
    record = cpu_record()
    record["tensorflow"] = {"imported": True, "version": "2.21.0", "op_determinism": True}
    return record


@pytest.mark.parametrize("record", [cpu_record(), tensorflow_record()], ids=["torch", "keras"])
def test_the_tags_of_a_run_are_its_hashes_schema_and_tagged_fields(record: dict[str, Any]) -> None:
    tags = fingerprint_tags(record, set())
    expected = {f.tag: f.read(record) for f in TAGGED if f.tagged(record)}
    assert {k: v for k, v in tags.items() if k in expected} == expected
    assert set(tags) == {*layout.HASH_TAGS.values(), layout.TAG_SCHEMA, *expected}


def test_tensorflow_fields_are_tagged_only_for_a_program_that_imported_it() -> None:
    torch_tags = fingerprint_tags(cpu_record(), set())
    keras_tags = fingerprint_tags(tensorflow_record(), set())
    gated = [f for f in TAGGED if f.tagged_if is not None]
    assert {f.tag for f in gated} == {layout.TAG_TENSORFLOW, layout.TAG_TF_OP_DETERMINISM}
    assert not {f.tag for f in gated} & set(torch_tags)
    assert keras_tags[layout.TAG_TF_OP_DETERMINISM] == "on"


@pytest.mark.parametrize("record", [cpu_record(), tensorflow_record()], ids=["torch", "keras"])
def test_the_record_rebuilt_from_the_tags_holds_each_tagged_field(record: dict[str, Any]) -> None:
    """What ``diff`` compares for a run whose artifact is gone: every tagged field at its path,
    in the tag's words, and the field that gates a tag set again."""
    partial = record_from_tags(fingerprint_tags(record, set()))
    for field in TAGGED:
        if field.tagged(record):
            assert get_path(partial, field.path) == field.read(record), field.path
            if field.tagged_if is not None:
                assert get_path(partial, field.tagged_if) is True
        else:
            assert get_path(partial, field.path) is None, field.path
    # every hash has its tag; a record captured before a hash existed (the fixtures predate
    # ``replicate``) tags it "unavailable"
    hashes = record["hashes"]
    assert partial["hashes"] == {n: hashes.get(n, "unavailable") for n in layout.HASH_TAGS}
    assert summary_record(record) == partial


def test_a_rule_for_a_declared_field_has_the_declared_effect() -> None:
    ruled = [r for r in RULES if r.pattern in BY_PATH]
    assert len(ruled) >= 10
    for rule in ruled:
        assert rule.effect == BY_PATH[rule.pattern].effect, rule.pattern
    for field in FIELDS:
        rule = rule_for(field.path)
        if rule is not None and rule.pattern == field.path:
            assert rule.effect == field.effect


def test_a_rule_that_contradicts_its_declaration_fails_when_the_rules_are_collected() -> None:
    (torch_rule,) = [r for r in RULES if r.pattern == "torch.version"]
    wrong = replace(torch_rule, effect="recipe")
    with pytest.raises(ValueError, match=r"'torch\.version' says 'recipe'; its declaration says"):
        _collect([*[r for r in RULES if r is not torch_rule], wrong])
    assert _collect(RULES) == RULES


def test_declared_rule_takes_the_effect_and_refuses_an_undeclared_field() -> None:
    rule = declared_rule("git.dirty", "why", HASH_GROUP, priority=1)
    assert isinstance(rule, Rule)
    assert rule.effect == BY_PATH["git.dirty"].effect == "recipe"
    with pytest.raises(ValueError, match="not a declared field"):
        declared_rule("git.dirtyy", "why", HASH_GROUP, priority=1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"path": "numerics.x", "effect": "sometimes"}, "effect of declared field"),
        ({"path": "numerics..x", "effect": "none"}, "not a dotted path"),
        ({"path": "numerics.*", "effect": "none"}, "not a dotted path"),
        ({"path": "numerics.x", "effect": "none", "tag": "blas"}, "must start with"),
    ],
)
def test_a_malformed_declaration_fails_when_it_is_made(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Declared(**kwargs)


def test_paths_and_tags_are_declared_once() -> None:
    paths = [f.path for f in FIELDS]
    tags = [f.tag for f in TAGGED]
    assert len(set(paths)) == len(paths)
    assert len(set(tags)) == len(tags)
    assert all(f.section == f.path.split(".")[0] for f in FIELDS)


def test_a_field_reads_the_same_from_a_copy_of_its_record() -> None:
    """Readers are pure: the tag of a record and of its copy agree, and the record is untouched."""
    record = tensorflow_record()
    before = copy.deepcopy(record)
    assert [f.read(record) for f in FIELDS] == [f.read(copy.deepcopy(record)) for f in FIELDS]
    assert record == before
