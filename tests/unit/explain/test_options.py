"""What ``explain`` takes (``explain/options.py``): checked when built, the step made a number,
and the same object whether ``mfp.explain`` or ``fingerprint explain`` builds it."""

from __future__ import annotations

import inspect
from dataclasses import FrozenInstanceError, fields
from typing import Any

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint.cli import cmd_explain
from mlflow_fingerprint.cli.main import build_parser
from mlflow_fingerprint.errors import ExplainError
from mlflow_fingerprint.explain.options import ExplainOptions
from mlflow_fingerprint.tracking.progress import Progress


def test_defaults_and_the_step_made_a_number() -> None:
    o = ExplainOptions()
    assert (o.metric, o.at, o.filter_string, o.include_unfinished, o.progress) == (
        None,
        "final",
        None,
        False,
        False,
    )
    assert ExplainOptions(at="100") == ExplainOptions(at=100)
    assert ExplainOptions(at=" 7 ").at == 7
    with pytest.raises(FrozenInstanceError):
        o.metric = "loss"  # type: ignore[misc]


@pytest.mark.parametrize("at", ["last", "-1", -1, 1.5, True, 2**63])
def test_a_bad_step_is_one_line_when_built(at: Any) -> None:
    with pytest.raises(ExplainError) as raised:
        ExplainOptions(at=at)
    assert str(raised.value).startswith("--at must be final or a step >= 0")
    assert "\n" not in str(raised.value)


def test_the_api_refuses_a_bad_step_before_reading_a_store() -> None:
    with pytest.raises(ExplainError, match="--at must be"):
        mfp.explain("sweep", at="last", tracking_uri="sqlite:////nowhere/mlflow.db")


def test_the_keywords_are_the_fields() -> None:
    keywords = {
        name
        for name, p in inspect.signature(mfp.explain).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert keywords == {f.name for f in fields(ExplainOptions)}


def test_the_command_line_builds_the_options_the_api_does() -> None:
    argv = ["explain", "sweep", "--metric", "val_loss", "--at", "100"]
    argv += [
        "--filter",
        "params.lr = '0.1'",
        "--include-unfinished",
        "--tracking-uri",
        "sqlite:///m.db",
    ]
    args = build_parser().parse_args(argv)
    progress = Progress(False)
    assert cmd_explain.options_of(args, progress) == ExplainOptions(
        metric="val_loss",
        at=100,
        filter_string="params.lr = '0.1'",
        tracking_uri="sqlite:///m.db",
        include_unfinished=True,
        progress=progress,
    )
    defaults = build_parser().parse_args(["explain", "sweep"])
    assert cmd_explain.options_of(defaults, False) == ExplainOptions()
