"""What ``fingerprinted`` takes (``run/options.py``): checked when the decorator is built, its
mappings frozen copies, and each keyword a field."""

from __future__ import annotations

import inspect
from dataclasses import fields
from types import MappingProxyType
from typing import Any

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint.run.options import FingerprintOptions


def test_the_decorator_holds_the_options_its_keywords_build() -> None:
    tags = {"team": "vision"}
    built = mfp.fingerprinted(experiment="digits", seed=0, deterministic="warn", tags=tags)
    tags["team"] = "audio"  # changed after: not the run's
    assert built.options == FingerprintOptions(
        experiment="digits", seed=0, deterministic="warn", tags={"team": "vision"}
    )
    assert isinstance(built.options.tags, MappingProxyType)


def test_program_options_are_a_frozen_copy() -> None:
    given = {"lr": 0.1}
    o = FingerprintOptions(program_options=given)
    given["lr"] = 0.2
    assert o.program_options == {"lr": 0.1}
    assert isinstance(o.program_options, MappingProxyType)
    assert FingerprintOptions().program_options is None


@pytest.mark.parametrize(
    ("keywords", "said"),
    [
        ({"seed": -1}, "seed"),
        ({"deterministic": "always"}, "deterministic"),
        ({"metrics": "sum"}, "metrics"),
        ({"flush_timeout_s": float("inf")}, "flush_timeout_s"),
        ({"start_timeout_s": -1}, "start_timeout_s"),
        ({"batch_size": -1}, "batch_size"),
    ],
)
def test_a_bad_keyword_fails_when_the_decorator_is_built(keywords: Any, said: str) -> None:
    with pytest.raises(ValueError, match=said) as raised:
        mfp.fingerprinted(**keywords)
    assert "\n" not in str(raised.value)


def test_the_keywords_are_the_fields() -> None:
    """``options=`` is held as ``program_options``; every other keyword under its own name."""
    keywords = {
        "program_options" if name == "options" else name
        for name, p in inspect.signature(mfp.fingerprinted).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert keywords == {f.name for f in fields(FingerprintOptions)}
