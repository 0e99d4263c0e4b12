"""``MLFLOW_FINGERPRINT_STOP_AFTER``'s step numbers (``run/stop.py``): what counts as a step. The
sink that stops a training is tested with the rest of a rerun's requests in ``test_apply.py``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mlflow_fingerprint.run.stop import step_number


@pytest.mark.parametrize(
    ("step", "number"),
    [
        (3, 3),
        (np.int64(4), 4),
        (torch.tensor(5), 5),
        (6.0, 6),
        ("7", 7),
        (None, None),
        (True, None),  # a flag is no step
        ("seven", None),
        ([1], None),
    ],
)
def test_a_step_is_an_integer_of_any_kind_and_nothing_else(
    step: object, number: int | None
) -> None:
    assert step_number(step) == number
