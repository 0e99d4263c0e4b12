"""What ``explain`` takes, as one frozen object checked when built: ``mfp.explain`` builds it from
its keywords and ``fingerprint explain`` from its options, so the two cannot read a value
differently (``--at 100`` and ``at=100`` are the same step)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ExplainError
from ..limits import check_step
from ..tracking.progress import Progress


def step_of(at: str | int) -> str | int:
    """``"final"`` or a step MLflow can store (``limits.check_step``)."""
    if at == "final":
        return "final"
    step: Any = at
    if isinstance(at, str) and at.strip().isdigit():
        step = int(at)
    try:
        return check_step("--at", step)
    except ValueError:
        raise ExplainError(f"--at must be final or a step >= 0, not {at!r}") from None


@dataclass(frozen=True)
class ExplainOptions:
    """What ``explain`` takes besides the experiment.

    ``metric``: the metric to explain (default: the summary metric most runs share). ``at``:
    ``"final"`` (each run's last value) or a step, held as an int once built.
    ``filter_string``: MLflow's search syntax, the runs to take. ``tracking_uri``: the store.
    ``include_unfinished``: FAILED, KILLED and RUNNING runs too. ``progress``: a line on
    stderr while a read takes over 2 s (True, or a ``Progress`` the caller closes)."""

    metric: str | None = None
    at: str | int = "final"
    filter_string: str | None = None
    tracking_uri: str | None = None
    include_unfinished: bool = False
    progress: bool | Progress = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "at", step_of(self.at))
