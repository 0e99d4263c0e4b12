"""The ranges of the numbers a user hands over (``limits.py``): each check says what it
accepts, and refuses NaN, infinities, booleans and out-of-range values in one line."""

from __future__ import annotations

import math

import pytest

from mlflow_fingerprint.limits import (
    MAX_SECONDS,
    MAX_STEP,
    check_count,
    check_seconds,
    check_step,
    check_tolerance,
)


def test_seconds_are_finite_positive_and_at_most_a_week() -> None:
    assert check_seconds("--timeout", 30) == 30.0
    assert check_seconds("--timeout", 0, zero=True) == 0.0
    assert check_seconds("--timeout", MAX_SECONDS) == MAX_SECONDS
    for bad in (0, -1, math.nan, math.inf, MAX_SECONDS + 1):
        with pytest.raises(ValueError, match=r"--timeout must be a number of seconds, more than 0"):
            check_seconds("--timeout", bad)
    with pytest.raises(ValueError, match="must be a number, not True"):
        check_seconds("--timeout", True)
    with pytest.raises(ValueError, match="must be a number, not '5'"):
        check_seconds("--timeout", "5")


def test_tolerances_counts_and_steps() -> None:
    assert check_tolerance("--rtol", 0) == 0.0
    for bad in (-1e-9, math.nan, math.inf):
        with pytest.raises(ValueError, match="--rtol must be a finite number >= 0"):
            check_tolerance("--rtol", bad)
    assert check_count("--jobs", 4, 1, 8) == 4
    for bad in (0, 9, 2.0, False):
        with pytest.raises(ValueError, match="--jobs must be a whole number from 1 to 8"):
            check_count("--jobs", bad, 1, 8)
    assert check_step("--until-step", MAX_STEP) == MAX_STEP
    with pytest.raises(ValueError, match="from 0 to"):
        check_step("--until-step", MAX_STEP + 1)
