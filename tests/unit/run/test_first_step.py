"""The first step's recorder (``run/first_step.py``) without a training: a framework's callback
hands it the step (``taken``), as Lightning's does; the optimizer hook itself is a system test
(tests/system/test_step_zero_runs.py)."""

from __future__ import annotations

import torch

from mlflow_fingerprint.capture.first_step import AT_STEP, compiled, weights_record
from mlflow_fingerprint.run.first_step import FirstStepRecorder


def test_a_step_taken_records_what_the_process_ran_beside_the_weights_once() -> None:
    """Every field ``capture.first_step.AT_STEP`` names is read at the step, compiled code
    included; a second call returns the first record, read nothing again."""
    model = torch.nn.Linear(3, 2)
    recorder = FirstStepRecorder()
    try:
        record = recorder.taken(
            "lightning", lambda: weights_record([list(model.parameters())], torch)
        )
        assert set(AT_STEP) <= set(record)
        assert record["compiled"] == compiled()
        assert record["recorded_by"] == "lightning"
        again = recorder.taken("keras", lambda: {"digest": "other"})
        assert again == record
        assert recorder.record() == record
    finally:
        recorder.stop()
