"""A run's watched tensors read back for the comparator; an unreadable file is a note."""

from __future__ import annotations

from pathlib import Path

from mlflow.tracking import MlflowClient

from mlflow_fingerprint import layout
from mlflow_fingerprint.model.watched import TensorRecord, encode
from mlflow_fingerprint.tracking import numerics_steps

RECORD = TensorRecord(1, "backward", "fc", "Linear", "weight", 0, "float32", (2, 2), "ab", 1.0)


def _run_with(client: MlflowClient, tmp: Path, data: bytes | None) -> str:
    run_id = client.create_run("0").info.run_id
    if data is not None:
        path = tmp / Path(layout.STEPS_ARTIFACT).name
        path.write_bytes(data)
        client.log_artifact(run_id, str(path), str(Path(layout.STEPS_ARTIFACT).parent))
    return run_id


def test_read_watched_tensors_none_and_a_damaged_file(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    client = MlflowClient(sqlite_tracking_uri)
    good = _run_with(client, tmp_path, encode([RECORD]))
    assert numerics_steps.read(client, sqlite_tracking_uri, good, "A") == ((RECORD,), None)
    none = _run_with(client, tmp_path, None)
    assert numerics_steps.read(client, sqlite_tracking_uri, none, "A") == ((), None)
    bad = _run_with(client, tmp_path, b"not json\n")
    records, note = numerics_steps.read(client, sqlite_tracking_uri, bad, "B")
    assert records == ()
    assert note is not None
    assert note.startswith(f"run B's {layout.STEPS_ARTIFACT} was not read: line 1")
