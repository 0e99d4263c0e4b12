"""A run compared on its ``fingerprint.*`` tags (``compare/partial.py``): the partial record the
tags describe, a whole record reduced to the same summary, and the note the report gives."""

from __future__ import annotations

from mlflow_fingerprint.compare.partial import (
    has_fingerprint_tags,
    partial_note,
    record_from_tags,
    summary_record,
)
from mlflow_fingerprint.tracking.tags import fingerprint_tags
from support.records import cpu_record, seeded


def test_the_tags_of_a_real_record_give_back_its_hashes_and_tagged_fields_as_text() -> None:
    record = seeded(cpu_record(), 3)
    tags = fingerprint_tags(record, set())
    assert has_fingerprint_tags(tags)
    assert not has_fingerprint_tags({"mlflow.runName": "x"})
    partial = record_from_tags(tags)
    assert partial["hashes"] == record["hashes"]
    assert partial["torch"] == {"version": record["torch"]["version"]}
    assert partial["seeds"] == {"requested": "3"}  # as the tag writes it
    assert "platform" not in partial  # what no tag holds is not guessed


def test_a_whole_record_is_reduced_to_the_same_summary_and_keeps_its_params() -> None:
    record = {**seeded(cpu_record(), 3), "params": {"lr": "0.1"}}
    summary = summary_record(record)
    assert summary["params"] == {"lr": "0.1"}
    assert {k: v for k, v in summary.items() if k != "params"} == record_from_tags(
        fingerprint_tags(record, set())
    )


def test_the_note_names_the_run_whose_artifact_could_not_be_read() -> None:
    note = partial_note("B", "abc123", "artifact missing")
    assert note.startswith("B's record is partial: the fingerprint artifact of run abc123 ")
    assert "(artifact missing)" in note
    assert "the fingerprint artifact of A could not" in partial_note("A", None, "gone")
