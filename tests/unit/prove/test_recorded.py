"""A recorded run as a rerun reads it (``prove/recorded.py``): from a real sqlite store, with its
wall time, refused where it holds no fingerprint; and how this machine differs from the run's in
what no rerun can set."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlflow_fingerprint.errors import FingerprintError
from mlflow_fingerprint.prove.recorded import differences, fingerprint_of, machine_gaps, recorded
from support.records import cpu_capture, edit, log_run, new_store

PROGRAM = {
    "program.argv": ["train.py", "--seed", "0"],
    "program.entry": {"kind": "script", "path": "train.py", "sha256": "ab"},
    "program.cwd": ".",
    "git.commit": "0123456789abcdef0123456789abcdef01234567",
    "git.dirty": False,
}


def test_a_stored_run_is_read_with_its_recipe_and_wall_time(
    tmp_path: Path, mlflow_db_template: Path
) -> None:
    uri = new_store(tmp_path, mlflow_db_template)
    record = edit(cpu_capture(), **PROGRAM)
    run_id = log_run(uri, "e", "a", record, {"loss": [1.0, 0.5]})
    found = recorded(run_id, uri, None, "RUN")
    assert (found.run_id, found.uri) == (run_id, uri)
    assert found.recipe.argv == ("train.py", "--seed", "0")
    assert found.recipe.commit == PROGRAM["git.commit"]
    assert found.wall_s is not None
    assert found.wall_s >= 0
    assert found.record["hashes"] == record["hashes"]
    assert fingerprint_of(run_id, uri)["hashes"] == record["hashes"]


def test_a_run_without_a_fingerprint_is_refused_in_one_line(
    tmp_path: Path, mlflow_db_template: Path
) -> None:
    uri = new_store(tmp_path, mlflow_db_template)
    run_id = log_run(uri, "e", "plain", None, {"loss": [1.0]})
    with pytest.raises(FingerprintError) as caught:
        recorded(run_id, uri, None, "RUN")
    assert "\n" not in str(caught.value)
    assert "no fingerprint" in str(caught.value)


def test_this_machine_differs_from_its_own_capture_in_nothing() -> None:
    assert machine_gaps(cpu_capture()) == ()


def test_a_run_of_another_machine_shows_what_no_rerun_can_set_and_only_that() -> None:
    other = edit(
        cpu_capture(),
        **{"torch.version": "1.0.0", "python.version": "3.0.1", "seeds.requested": 7},
    )
    gaps = {d.field: (d.a, d.b) for d in machine_gaps(other)}
    here = cpu_capture()
    assert gaps == {
        "torch.version": ("1.0.0", here["torch"]["version"]),
        "python.version": ("3.0.1", here["python"]["version"]),
    }  # the seed differs too, but a rerun sets it
    assert "seeds.requested" in {d.field for d in differences(other, here)}
