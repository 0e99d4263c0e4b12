"""``determinism.requested``: the decision behind the determinism flags, as each switch records it,
through the JSON record and back, and read beside records written before the field existed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint.capture import RunInfo
from mlflow_fingerprint.capture.context import DeterminismRequest
from mlflow_fingerprint.integrations import _record
from mlflow_fingerprint.model.fingerprint import Fingerprint
from mlflow_fingerprint.present.summary import summary_text
from support.records import FIXTURES, cpu_record, edit

INTEGRATIONS = Path(mfp.__file__).parent / "integrations"


def requested(fp: Fingerprint) -> object:
    return fp.get("determinism.requested")


def test_a_plain_capture_records_that_nobody_asked() -> None:
    fp = mfp.capture()
    assert "requested" in fp["determinism"]
    assert requested(fp) is None
    assert "asked" not in summary_text(fp)


def test_a_request_is_recorded_but_hashed_only_through_its_flags() -> None:
    plain = mfp.capture()
    request = DeterminismRequest("warn", "mlflow_fingerprint.fingerprinted", ("a", "b"))
    asked = mfp.capture(run=RunInfo(deterministic=request))
    assert requested(asked) == {
        "mode": "warn",
        "by": "mlflow_fingerprint.fingerprinted",
        "applied": ["a", "b"],
    }
    # Same process, same flags: whoever asked, the arithmetic is the same.
    assert asked.hashes["numerics"] == plain.hashes["numerics"]
    line = next(x for x in summary_text(asked).splitlines() if x.startswith("deterministic"))
    assert line.endswith("· asked warn by mlflow_fingerprint.fingerprinted")


@pytest.mark.parametrize(
    ("seeded_by", "value", "mode", "by"),
    [
        ("lightning.seed_everything", True, "on", "lightning.Trainer(deterministic)"),
        ("lightning.seed_everything", "warn", "warn", "lightning.Trainer(deterministic)"),
        ("lightning.seed_everything", None, "off", "lightning.Trainer(deterministic)"),
        ("transformers.Trainer", True, "on", "transformers.TrainingArguments(full_determinism)"),
        ("transformers.Trainer", False, "off", "transformers.TrainingArguments(full_determinism)"),
    ],
)
def test_trainer_integrations_name_their_switch(seeded_by, value, mode, by) -> None:
    fp = _record.capture_for_trainer(
        seed=None, seeded_by=seeded_by, declared={}, deterministic=value
    )
    assert requested(fp) == {"mode": mode, "by": by, "applied": None}


def test_every_integration_has_its_switch_named() -> None:
    """The switch is looked up by the integration's SEEDED_BY: renaming one must not silently
    turn its request into an unnamed one."""
    for module in ("lightning.py", "transformers.py"):
        source = (INTEGRATIONS / module).read_text()
        (name,) = re.findall(r'^SEEDED_BY = "([^"]+)"', source, re.MULTILINE)
        assert name in _record.DETERMINISM_SWITCHES, module


def test_the_request_survives_the_json_record(tmp_path: Path) -> None:
    request = DeterminismRequest.of(True, "mlflow_fingerprint.fingerprinted", ("x=1",))
    fp = mfp.capture(run=RunInfo(deterministic=request))
    path = tmp_path / "fp.json"
    path.write_text(fp.to_json())
    loaded = Fingerprint.load(path)
    assert requested(loaded) == {
        "mode": "on",
        "by": "mlflow_fingerprint.fingerprinted",
        "applied": ["x=1"],
    }
    assert loaded.hashes == fp.hashes


def test_a_record_from_before_the_field_still_loads_and_compares() -> None:
    old_path = FIXTURES / "fingerprints" / "cpu.json"
    old = Fingerprint.load(old_path)
    assert "requested" not in old["determinism"]
    assert "asked" not in summary_text(old)
    off = {"mode": "off", "by": "mlflow_fingerprint.fingerprinted", "applied": []}
    report = mfp.diff(old_path, edit(cpu_record(), **{"determinism.requested": off}))
    assert {d.field for d in report.differences} == {
        "determinism.requested.mode",
        "determinism.requested.by",
        "determinism.requested.applied",
    }
    assert report.exit_code == 0  # only the new record knows who asked: not a difference
    mode = next(d for d in report.differences if d.field == "determinism.requested.mode")
    assert mode.effect == "none"
    assert "A recorded no request" in mode.explanation
