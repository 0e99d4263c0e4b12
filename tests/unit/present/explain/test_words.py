"""The sentences every explain renderer shares (``present/explain/words.py``), on a report whose
numbers are known."""

from __future__ import annotations

import dataclasses

import pytest

from mlflow_fingerprint.present.explain.words import (
    agreed,
    headline,
    left_out_line,
    noise_line,
    num,
    pct,
    segments,
    unexplained,
)
from support.explanation import sample


def test_the_headline_names_the_important_field_and_its_share() -> None:
    assert headline(sample()) == "Beyond the noise, the spread is program.call.lr (80%)."


def test_a_field_the_runs_cannot_decide_is_named_not_called_no_cause() -> None:
    """Four runs, two learning rates, replicates bitwise equal: lr holds all the spread but its
    interval is 0-100%; the headline must not say no field moves the metric."""
    from support.explanation import LR, THREADS

    lr = dataclasses.replace(LR, share=1.0, interval=(0.0, 1.0), verdict="undecided")
    report = dataclasses.replace(sample(), factors=(lr, THREADS))
    assert headline(report) == (
        "Too few runs, or too much noise, to say which recorded field moves the metric; "
        "undecided: program.call.lr (100%)."
    )
    nothing = dataclasses.replace(sample(), factors=(THREADS,))
    assert headline(nothing).startswith("No recorded field moves the metric beyond the noise")


def test_the_variance_splits_into_the_field_the_noise_and_the_rest() -> None:
    parts = segments(sample())
    assert [(s.label, s.kind) for s in parts] == [
        ("program.call.lr", "factor"),
        ("noise (seeds)", "noise"),
        ("unexplained", "rest"),
    ]
    assert unexplained(sample()) == pytest.approx(0.1)
    assert sum(s.width for s in parts) == pytest.approx(1.0)


def test_the_noise_the_left_out_runs_and_numbers_are_said_plainly() -> None:
    report = sample()
    assert noise_line(report).startswith("Noise floor: sd 0.05 between replicates")
    assert left_out_line(report) == "Left out: 1 run (1 no val_loss)."
    assert (num(1.23456), pct(0.8), num(None)) == ("1.235", "80%", "—")
    assert agreed(report) is None
    flat = dataclasses.replace(report, sd=0.0, factors=())
    assert agreed(flat) == (
        "sweep: all 6 runs agree on val_loss (final value 1.5): no spread to explain."
    )
