"""The ranges of every number a user hands over: command-line options, ``fingerprinted``'s time
limits and the tuning variables. One place, so ``--timeout``, ``start_timeout_s`` and
``MLFLOW_FINGERPRINT_REQUEST_TIMEOUT`` refuse the same values with the same words.

NaN compares false with everything and an infinite or absurd number of seconds overflows the
timers it reaches (``threading.Timer``, socket timeouts), so each check says what it accepts
rather than what it refuses. Each raises ValueError with one line naming the value.
"""

from __future__ import annotations

import math
from typing import Any

# A week: longer than any training a time limit is meant for, and far below what a timer takes.
MAX_SECONDS = 7 * 24 * 3600.0
# MLflow stores a step as a 64-bit integer.
MAX_STEP = 2**63 - 1
MAX_RESULTS = 1_000_000
MAX_JOBS = 1024  # reruns side by side: a cluster's worth, never an unbounded fork


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, not {value!r}")
    return float(value)


def check_seconds(name: str, value: Any, *, zero: bool = False) -> float:
    """A time limit: finite, positive (or zero where ``zero``), at most MAX_SECONDS."""
    seconds = _number(name, value)
    low_ok = seconds >= 0 if zero else seconds > 0
    if not (math.isfinite(seconds) and low_ok and seconds <= MAX_SECONDS):
        low = "0 or more" if zero else "more than 0"
        raise ValueError(
            f"{name} must be a number of seconds, {low} and at most {MAX_SECONDS:g} (a week), "
            f"not {value}"
        )
    return seconds


def check_tolerance(name: str, value: Any) -> float:
    """A tolerance of the comparator: finite and not negative."""
    number = _number(name, value)
    if not (math.isfinite(number) and number >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, not {value}")
    return number


def check_count(name: str, value: Any, low: int, high: int) -> int:
    """An integer from ``low`` to ``high``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be a whole number from {low} to {high}, not {value}")
    return value


def check_step(name: str, value: Any) -> int:
    """A training step: a whole number MLflow can store."""
    return check_count(name, value, 0, MAX_STEP)
