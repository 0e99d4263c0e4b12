"""Version-safe reads (``capture/reading.py``), on the real torch: a flag this torch lacks, or a
read that raises, becomes an ``unavailable`` record saying why, never an exception."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from mlflow_fingerprint.capture.context import ProbeContext
from mlflow_fingerprint.capture.core import make_context
from mlflow_fingerprint.capture.reading import (
    attr,
    env_values,
    first_line,
    read,
    safe,
    torch_missing,
)
from mlflow_fingerprint.model.fingerprint import is_unavailable


def test_a_flag_is_read_or_said_missing_for_this_torch() -> None:
    assert read(torch, "backends.cudnn.deterministic") is torch.backends.cudnn.deterministic
    assert read(torch, "get_num_threads", call=True) == torch.get_num_threads()
    assert read(torch, "backends.no_such_flag") == {
        "unavailable": f"torch.backends.no_such_flag does not exist in torch {torch.__version__}"
    }
    assert attr(torch, "backends.cudnn") is torch.backends.cudnn
    assert attr(torch, "nothing.here") is not None  # the marker, not an exception


def test_a_read_that_raises_is_unavailable_with_the_first_line_of_why() -> None:
    found = read(torch, "manual_seed", call=True)  # a call missing its argument
    assert is_unavailable(found)
    assert found["unavailable"].startswith("reading torch.manual_seed raised TypeError: ")
    assert safe(lambda: 1 // 0) == {
        "unavailable": "ZeroDivisionError: integer division or modulo by zero"
    }
    assert safe(lambda: 3) == 3


def test_first_line_is_short_and_never_empty() -> None:
    assert first_line(ValueError("one\ntwo")) == "one"
    assert first_line(ValueError("")) == "ValueError"
    assert first_line(ValueError("x" * 500), limit=10) == "x" * 10


def test_only_the_named_variables_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setenv("MFP_SECRET_TOKEN", "hunter2")
    assert env_values(["OMP_NUM_THREADS", "MKL_NUM_THREADS"]) == {
        "OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": None
    }  # fmt: skip


def test_a_section_without_torch_says_why() -> None:
    ctx = make_context()
    assert torch_missing(ctx) is None
    absent: ProbeContext = replace(ctx, torch=None, torch_error="torch failed to import: OSError")
    assert torch_missing(absent) == {"unavailable": "torch failed to import: OSError"}
    assert torch_missing(replace(absent, torch_error=None)) == {
        "unavailable": "torch is not installed"
    }
