"""Walking two records together: which leaves differ, and how unreadable sections line up."""

from __future__ import annotations

import pytest

from mlflow_fingerprint import diff
from mlflow_fingerprint.compare.fields import MISSING, field_changes, varying, walk
from mlflow_fingerprint.errors import FingerprintError
from support.records import cpu_record, edit, gpu_record, write


def changes(a, b):
    return {c.path: (c.a, c.b) for c in walk(a, b)}


def test_an_unreadable_section_lines_up_with_every_field_of_a_readable_one():
    gone = {"unavailable": "no NVIDIA driver"}
    found = changes({"gpu": gone}, {"gpu": {"driver_version": "550", "devices": [{"name": "X"}]}})
    assert found == {"gpu.driver_version": (gone, "550"), "gpu.devices.0.name": (gone, "X")}


def test_two_unreadable_values_are_not_a_difference_whatever_the_reason():
    assert changes({"x": {"unavailable": "a"}}, {"x": {"unavailable": "b"}}) == {}


def test_lists_of_objects_are_indexed_lists_of_scalars_are_one_value():
    a = {"loaders": [{"n": 1}], "flags": ["avx", "avx2"]}
    b = {"loaders": [{"n": 1}, {"n": 2}], "flags": ["avx"]}
    assert changes(a, b) == {"loaders.1.n": (MISSING, 2), "flags": (["avx", "avx2"], ["avx"])}


def test_json_true_is_not_1_and_an_empty_mapping_is_absent_fields():
    assert changes({"x": True}, {"x": 1}) == {"x": (True, 1)}
    assert changes({"d": {}}, {"d": {"batch_size": 32}}) == {"d.batch_size": (MISSING, 32)}


def test_identical_records_and_record_metadata_give_no_changes():
    record = cpu_record()
    later = edit(record, captured_at="2030-01-01T00:00:00Z", tool_version="9.9")
    assert field_changes(record, later) == []


def test_cpu_against_gpu_machine_names_the_gpu_fields():
    report = diff(cpu_record(), gpu_record("h100"))
    fields = {d.field for d in report.effective_differences}
    assert "gpu.devices.0.architecture" in fields
    assert report.exit_code == 1


def test_a_newer_schema_is_refused_with_the_version_and_what_to_upgrade(tmp_path):
    """Its fields may mean what this release cannot know: no diff is better than a wrong one."""
    newer = edit(cpu_record(), schema_version=99, **{"quantum.qubits": 5})
    with pytest.raises(FingerprintError) as info:
        diff(write(tmp_path, "newer", newer), write(tmp_path, "now", cpu_record()))
    message = str(info.value)
    assert "schema_version 99" in message
    assert "newer than this release reads (1" in message
    assert "pip install --upgrade mlflow-fingerprint" in message
    assert "\n" not in message


def test_varying_leaves_out_the_records_own_keys_only_at_the_top() -> None:
    """``leave_out`` skips keys of the records themselves (``explain``: what describes a record),
    not a field of the same name deeper down; records shared by several runs keep it too."""
    a = {"hashes": {"x": "1"}, "params": {"lr": "0.1"}, "env": {"params": 1, "hashes": "a"}}
    b = {"hashes": {"x": "2"}, "params": {"lr": "0.2"}, "env": {"params": 2, "hashes": "b"}}
    out = frozenset({"hashes", "params"})
    found = dict(varying([a, b, a], leave_out=out))  # a twice: the walk of shared records
    assert found == {"env.params": [1, 2, 1], "env.hashes": ["a", "b", "a"]}
    assert set(dict(varying([a, b]))) == {"hashes.x", "params.lr", "env.params", "env.hashes"}


def test_varying_names_a_mapping_s_keys_as_text_whatever_their_type() -> None:
    """A JSON object is walked as it is; a mapping with other keys (built in Python) by their
    text, as before."""
    found = dict(varying([{"gpus": {0: "a", 1: "b"}}, {"gpus": {0: "a", 1: "c"}}]))
    assert found == {"gpus.1": ["b", "c"]}
