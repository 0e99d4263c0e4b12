"""Read a run's ``fingerprint/numerics/steps.jsonl``, written by ``mfp.watch``, for the
comparator.

Of a torchrun job, that file holds rank 0's view, and only it is compared, whichever curve
parts: the other ranks' files (``steps.rank<N>.jsonl``, under ``metrics="per_rank"``) are kept
in the run for a person to read, not compared (one rule, the same for every pair of runs)."""

from __future__ import annotations

from typing import Any

from .. import layout
from ..model.watched import TensorRecord, decode
from .store import read_artifact, store_errors


def read(
    mlflow_client: Any, uri: str, run_id: str, label: str
) -> tuple[tuple[TensorRecord, ...], str | None]:
    """The run's watched tensors (empty where it watched none), and a note where the file is
    there but unreadable: the diff goes on without it rather than fail."""
    with store_errors(uri):
        data = read_artifact(mlflow_client, run_id, layout.STEPS_ARTIFACT)
    if data is None:
        return (), None
    try:
        return decode(data), None
    except ValueError as exc:
        return (), f"run {label}'s {layout.STEPS_ARTIFACT} was not read: {exc}"
