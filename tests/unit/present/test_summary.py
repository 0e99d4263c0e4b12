"""A record's summary (``present/summary.py``): what ``show`` and ``capture`` print."""

from __future__ import annotations

from mlflow_fingerprint.model.fingerprint import Fingerprint
from mlflow_fingerprint.present.summary import summary_text
from support.records import cpu_record


def test_the_summary_names_python_torch_and_the_seed() -> None:
    record = cpu_record()
    text = summary_text(record)
    assert record["python"]["version"] in text
    assert record["torch"]["version"] in text
    assert summary_text(Fingerprint.from_dict(record)) == text  # a record or its Fingerprint
